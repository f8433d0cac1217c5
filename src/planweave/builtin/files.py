"""`search_files`: BM25 keyword search (`bm25s`) over one folder of .txt and .md files.

The folder is fixed when the tool is made (`search_files_tool(folder)`); the query is only ever
matched against text, never used as a path. Files whose real path (symlinks resolved) lies
outside the folder, hidden files and folders, symlinked folders and files over
`MAX_FILE_BYTES` are skipped. The index is built on the first search and rebuilt whenever a
file is added, removed or changes size or modification time.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ToolFailed, UserError
from ..tools import Tool
from ._common import missing

__all__ = ["MAX_FILE_BYTES", "MAX_RESULTS", "SNIPPET_CHARS", "search_files_tool"]

SUFFIXES = (".txt", ".md")
MAX_FILE_BYTES = 5_000_000
MAX_FILES = 10_000
MAX_RESULTS = 20
MAX_QUERY_CHARS = 1000
SNIPPET_CHARS = 400
_CHUNK_CHARS = 1200  # paragraphs longer than this are split into pieces of about 800

_PARAGRAPH_RE = re.compile(r"\n[ \t]*\n+")
_WORD_RE = re.compile(r"(?u)\b\w\w+\b")

Signature = tuple[tuple[str, str, int, int], ...]


@dataclass(frozen=True)
class _Index:
    signature: Signature
    paths: list[str]  # relative paths, POSIX style
    chunks: list[tuple[int, str]]  # (index into paths, paragraph text)
    retriever: Any  # bm25s.BM25, or None when no chunk has a searchable word


_indexes: dict[str, _Index] = {}
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _scan(root: Path) -> list[tuple[str, Path, os.stat_result]]:
    """The searchable files under `root` (a resolved path): relative path, real path, stat."""
    found: list[tuple[str, Path, os.stat_result]] = []
    seen: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in sorted(filenames):
            if filename.startswith(".") or not filename.lower().endswith(SUFFIXES):
                continue
            path = Path(dirpath, filename)
            try:
                real = path.resolve(strict=True)
                info = real.stat()
            except (OSError, RuntimeError):
                continue
            if not real.is_relative_to(root) or not stat.S_ISREG(info.st_mode):
                continue
            if info.st_size > MAX_FILE_BYTES or real in seen:  # a link to a file already seen
                continue
            seen.add(real)
            found.append((path.relative_to(root).as_posix(), real, info))
            if len(found) >= MAX_FILES:
                return found
    return found


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs; a lone Markdown heading joins the paragraph after it;
    very long paragraphs are cut at line, then word, boundaries."""
    merged: list[str] = []
    pending = ""
    for block in _PARAGRAPH_RE.split(text.replace("\r\n", "\n")):
        block = block.strip()
        if not block:
            continue
        if pending:
            block, pending = f"{pending}\n{block}", ""
        if block.startswith("#") and "\n" not in block:
            pending = block
            continue
        merged.append(block)
    if pending:
        merged.append(pending)
    pieces: list[str] = []
    for block in merged:
        if len(block) <= _CHUNK_CHARS:
            pieces.append(block)
            continue
        piece = ""
        for word in re.split(r"(\s+)", block):
            if len(piece) + len(word) > _CHUNK_CHARS * 2 // 3 and piece.strip():
                pieces.append(piece.strip())
                piece = ""
            piece += word
        if piece.strip():
            pieces.append(piece.strip())
    return pieces


def _fold(text: str) -> str:
    """Lower case without accents, so "café" finds "cafe"."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def _stem(word: str) -> str:
    """Harman's S-stemmer: plurals to singular ("libraries" -> "library", "files" -> "file")."""
    if len(word) > 4 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def _bm25s() -> Any:
    try:
        import bm25s  # type: ignore[import-untyped]
    except ImportError:
        raise missing("bm25s") from None
    return bm25s


def _tokenize(texts: list[str]) -> list[list[str]]:
    tokens = _bm25s().tokenize(
        [_fold(t) for t in texts],
        stopwords="en",
        stemmer=lambda words: [_stem(w) for w in words],
        return_ids=False,
        show_progress=False,
    )
    return [list(doc) for doc in tokens]


def _build(signature: Signature, files: list[tuple[str, Path, os.stat_result]]) -> _Index:
    bm25s = _bm25s()
    paths: list[str] = []
    chunks: list[tuple[int, str]] = []
    for rel, real, _info in files:
        try:
            text = real.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        paths.append(rel)
        chunks.extend((len(paths) - 1, p) for p in _paragraphs(text))
    retriever = None
    if chunks:
        corpus = _tokenize([text for _, text in chunks])
        if any(corpus):
            retriever = bm25s.BM25()
            retriever.index(corpus, show_progress=False)
    return _Index(signature, paths, chunks, retriever)


def _index(root: Path) -> _Index:
    key = str(root)
    with _locks_guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        files = _scan(root)
        signature: Signature = tuple(
            (rel, str(real), info.st_mtime_ns, info.st_size) for rel, real, info in files
        )
        index = _indexes.get(key)
        if index is None or index.signature != signature:
            index = _indexes[key] = _build(signature, files)
        return index


def _snippet(text: str, terms: list[str]) -> str:
    """The paragraph, or the SNIPPET_CHARS window of it around the first query word."""
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET_CHARS:
        return flat
    folded = _fold(flat)
    positions = [m.start() for m in _WORD_RE.finditer(folded) if _stem(m.group()) in terms]
    first = positions[0] if positions else 0
    start = max(0, first - SNIPPET_CHARS // 4)
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < first else start
    end = start + SNIPPET_CHARS - 2  # room for the two ellipses
    if end >= len(flat):
        end = len(flat)
        start = max(0, end - (SNIPPET_CHARS - 1))
    elif (space := flat.rfind(" ", start, end)) > first:
        end = space
    window = flat[start:end].strip()
    return ("…" if start > 0 else "") + window + ("…" if end < len(flat) else "")


def search(root: Path, query: str, k: int = 3) -> list[dict[str, Any]]:
    """The search behind `search_files`, over the resolved folder `root`."""
    if k < 1:
        raise ToolFailed("k must be at least 1")
    if not root.is_dir():
        raise ToolFailed(f"the files folder {root} no longer exists")
    index = _index(root)
    if index.retriever is None:
        return []
    terms = [t for t in _tokenize([query[:MAX_QUERY_CHARS]])[0] if t in index.retriever.vocab_dict]
    if not terms:
        return []
    scores = index.retriever.get_scores(terms)
    best: dict[int, tuple[float, int]] = {}  # file -> (score, chunk)
    for chunk, score in enumerate(scores.tolist()):
        if score <= 0:
            continue
        file_no = index.chunks[chunk][0]
        if file_no not in best or score > best[file_no][0]:
            best[file_no] = (score, chunk)
    ranked = sorted(best.items(), key=lambda item: (-item[1][0], index.paths[item[0]]))
    return [
        {
            "path": index.paths[file_no],
            "score": round(float(score), 4),
            "snippet": _snippet(index.chunks[chunk][1], terms),
        }
        for file_no, (score, chunk) in ranked[: min(k, MAX_RESULTS)]
    ]


def search_files_tool(folder: str | os.PathLike[str]) -> Tool:
    """A `search_files` tool bound to `folder` (which must exist); UserError naming the extra
    when its search library is not installed, before any run starts."""
    _bm25s()
    root = Path(folder).expanduser()
    try:
        root = root.resolve(strict=True)
    except (OSError, RuntimeError):
        raise UserError(f"the files folder {folder!s} does not exist") from None
    if not root.is_dir():
        raise UserError(f"the files folder {folder!s} is not a folder")

    def search_files(query: str, k: int = 3) -> list[dict[str, Any]]:
        """Search the user's text and Markdown files for a topic; returns the best files.

        Each result has path (relative to the folder), score (higher is better) and snippet
        (the best-matching paragraph, at most 400 characters). No match gives an empty list.

        Args:
            query: keywords to look for, such as "passport renewal deadline"
            k: how many files to return at most (1 to 20)
        """
        return search(root, query, k)

    return Tool.from_function(search_files)
