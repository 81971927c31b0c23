"""ackreplay.estimators — Westwood-family bandwidth estimators replayed over ACK streams. Pure library."""
