"""The checks a candidate question passes before it is kept (its value read as its sentence
gives it, its facts found, the round trip); they read with ``reading`` only."""
