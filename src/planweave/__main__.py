from planweave.cli import main

# Guarded, and imported absolutely: isolated tools' worker processes load the parent's main
# module again (as multiprocessing does), which must not start a second CLI.
if __name__ == "__main__":
    main()
