"""Confirmation strategies: what an agent says once a person has decided its state changes.

After a continuation settles paused calls that write shared state, the runner says the
agent's strategy text instead of asking the model again (the agent-framework seed's
Default / Recipe / DocumentWriter / TaskPlanner strategies). `steps` are the task steps a
decided call carried (the planner's), each {"description", "status", ...}.
"""


class ConfirmationStrategy:
    def on_approval_accepted(self, steps):
        raise NotImplementedError

    def on_approval_rejected(self, steps):
        raise NotImplementedError

    def on_state_confirmed(self):
        raise NotImplementedError

    def on_state_rejected(self):
        raise NotImplementedError


def _numbered(steps):
    return "".join(f"{i}. {s.get('description', '')}\n" for i, s in enumerate(steps, 1))


def _enabled(steps):
    return [s for s in steps or [] if s.get("status", "pending") not in ("skipped", "disabled")]


class DefaultConfirmationStrategy(ConfirmationStrategy):
    def on_approval_accepted(self, steps):
        chosen = _enabled(steps)
        return f"Executing {len(chosen)} approved steps:\n\n{_numbered(chosen)}\nAll steps completed successfully!"

    def on_approval_rejected(self, steps):
        return "No problem! What would you like me to change about the plan?"

    def on_state_confirmed(self):
        return "Changes confirmed and applied successfully!"

    def on_state_rejected(self):
        return "No problem! What would you like me to change?"


class RecipeConfirmationStrategy(DefaultConfirmationStrategy):
    def on_approval_accepted(self, steps):
        return f"Updating your recipe:\n\n{_numbered(_enabled(steps))}\nRecipe updated successfully!"

    def on_approval_rejected(self, steps):
        return "No problem! What ingredients or steps should I change?"

    def on_state_confirmed(self):
        return "Recipe changes applied successfully!"

    def on_state_rejected(self):
        return "No problem! What would you like me to adjust in the recipe?"


class DocumentWriterConfirmationStrategy(DefaultConfirmationStrategy):
    def on_approval_accepted(self, steps):
        return f"Applying your edits:\n\n{_numbered(_enabled(steps))}\nDocument updated successfully!"

    def on_approval_rejected(self, steps):
        return "No problem! Which changes should I keep or modify?"

    def on_state_confirmed(self):
        return "Document saved: your edits are applied."

    def on_state_rejected(self):
        return "No problem! I discarded the draft. What should I change about the document?"


class TaskPlannerConfirmationStrategy(DefaultConfirmationStrategy):
    def on_approval_accepted(self, steps):
        chosen = _enabled(steps)
        return f"Here is your confirmed plan ({len(chosen)} steps):\n\n{_numbered(chosen)}\nTasks confirmed and ready to go!"

    def on_approval_rejected(self, steps):
        return "No problem! Let me revise the plan. What would you like me to change?"

    def on_state_confirmed(self):
        return "Tasks confirmed and ready to execute!"

    def on_state_rejected(self):
        return "No problem! How should I adjust the task list?"
