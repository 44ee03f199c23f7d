"""The AG-UI protocol at the edge: the POST endpoint and its SSE relay, which input messages a thread
takes, a run's ending replayed from the database, and every CUSTOM event this project sends."""
