"""The REST routes under /api, one module per resource; each route calls the service functions
the CLI calls (plait.engine, plait.evolve, plait.store) and only shapes the result."""
