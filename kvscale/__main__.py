"""``python -m kvscale``."""

from kvscale.cli import main

if __name__ == "__main__":
    main()
