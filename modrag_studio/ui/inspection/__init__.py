"""Looking at what ran: the inspector, overlays, chunk map, citations, evidence debugger."""
