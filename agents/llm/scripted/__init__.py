"""The offline demo model: model.py streams `scripted_reply`, which asks one script per demo agent
(banking, ops, state for recipe/planner/writer, support) plus the chat demos and the self-check."""
