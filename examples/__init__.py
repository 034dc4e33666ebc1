"""Complete programs a user copies; each is run by a test (``tests/integration/``)."""
