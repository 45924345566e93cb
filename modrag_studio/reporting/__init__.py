"""A finished run told to people outside the studio: what it answered (the OpenAI-compatible
routes and the run report read it the same way), the plain-words story of its steps, and
self-contained HTML pages built from generic sections (no Qt, no network)."""
