"""The node result cache: keys from type, code, params and upstream; signed entries."""
