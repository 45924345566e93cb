"""The run history in the studio: the History dock, the read-only run view, the playground."""
