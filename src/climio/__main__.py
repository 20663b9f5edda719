"""``python -m climio`` is the ``climio`` command."""

from climio.cli import main

main()
