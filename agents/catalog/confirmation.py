"""Confirmation strategies: what an agent says once a person has decided its state changes.

After a continuation settles paused calls that write shared state, the runner says the
agent's strategy text instead of asking the model again (the agent-framework seed's
Default / Recipe / DocumentWriter / TaskPlanner strategies). `steps` are the task steps a
decided call carried (the planner's), each {"description", "status", ...}. The person reads these
(the runner speaks the chat owner's language), so they are translated, and say only what is known:
approved as proposed or edited, the strategy cannot tell.
"""

from django.utils.translation import gettext as _


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


def _listed(head, steps, tail):
    return f"{head}\n\n{_numbered(_enabled(steps))}\n{tail}"


class DefaultConfirmationStrategy(ConfirmationStrategy):
    def on_approval_accepted(self, steps):
        return _listed(_("Executing the approved steps:"), steps, _("All steps completed successfully!"))

    def on_approval_rejected(self, steps):
        return _("No problem! What would you like me to change about the plan?")

    def on_state_confirmed(self):
        return _("Changes confirmed and applied successfully!")

    def on_state_rejected(self):
        return _("No problem! What would you like me to change?")


class RecipeConfirmationStrategy(DefaultConfirmationStrategy):
    def on_approval_accepted(self, steps):
        return _listed(_("Updating your recipe:"), steps, _("Recipe updated successfully!"))

    def on_approval_rejected(self, steps):
        return _("No problem! What ingredients or steps should I change?")

    def on_state_confirmed(self):
        return _("Recipe changes applied successfully!")

    def on_state_rejected(self):
        return _("No problem! What would you like me to adjust in the recipe?")


class DocumentWriterConfirmationStrategy(DefaultConfirmationStrategy):
    def on_approval_accepted(self, steps):
        return _listed(_("Applying the approved changes:"), steps, _("Document updated successfully!"))

    def on_approval_rejected(self, steps):
        return _("No problem! Which changes should I keep or modify?")

    def on_state_confirmed(self):
        return _("The document is saved.")

    def on_state_rejected(self):
        return _("No problem! I discarded the draft. What should I change about the document?")


class TaskPlannerConfirmationStrategy(DefaultConfirmationStrategy):
    def on_approval_accepted(self, steps):
        return _listed(_("Here is your confirmed plan:"), steps, _("Tasks confirmed and ready to go!"))

    def on_approval_rejected(self, steps):
        return _("No problem! Let me revise the plan. What would you like me to change?")

    def on_state_confirmed(self):
        return _("Tasks confirmed and ready to execute!")

    def on_state_rejected(self):
        return _("No problem! How should I adjust the task list?")
