"""Steps the conformance checks share; the check modules import these, never each other."""
