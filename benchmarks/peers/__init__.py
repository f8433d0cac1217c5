"""Peers: ports of LLMCompiler and the original LLMCompiler itself (the paper's code, cloned at a
pinned commit, never copied here), each run in its own virtualenv by a long-lived runner process.

`setup.sh` builds the virtualenvs under `benchmarks/.peers/`; `client.py` starts the runners
from the benchmark; `protocol.py` is the runners' side; `dialects.py` is what the oracle serves
each port.  Nothing here may import planweave at package level: the runners import this package
from the peers' virtualenvs.
"""
