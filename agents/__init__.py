"""Agents and the runs of their threads: models, services, REST API, pages and sockets at this level;
runtime/ (in the worker), llm/ (chat models), agui/ (the AG-UI protocol), catalog/ (the demo agents)."""
