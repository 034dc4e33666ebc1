"""Word count with a logged store: see :mod:`examples.wordcount.app`."""
