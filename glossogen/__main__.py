"""``python -m glossogen``: the same CLI as the ``glossogen`` console script."""

from glossogen.cli import main

if __name__ == "__main__":
    main()
