"""``python -m apiclient.cli``: the ``flexplane`` command, where its console script is not installed."""

from apiclient.cli import main

if __name__ == "__main__":  # importing it (as a check of the distribution does) runs nothing
    main()
