"""What a tool says up front it will refuse (ToolDefaults.refuses): the same account on both sides of a
transfer, a currency its account is not in. A reviewer's edit the tool refuses is not approved
(services._check_edit), and the request page shows the same sentence under the diff before anyone
clicks. The arguments as asked are never blocked by it: the tool refuses them when it runs, as before.
"""

from . import registry


def said(defaults, arguments, requester) -> str:
    """The tool's own sentence for these cleaned arguments, in the reader's language, or ""."""
    if defaults is None or defaults.refuses is None:
        return ""
    return str(defaults.refuses(arguments, requester) or "")


def of_draft(approval, draft) -> str:
    """The same for arguments a reviewer is still typing: "" while they are not valid or name something
    that is not the requester's (the editor and the decision say those in their own words)."""
    defaults = registry.get(approval.tool_name)
    if defaults is None or defaults.refuses is None or not isinstance(draft, dict):
        return ""
    try:
        cleaned = defaults.validate(draft, requester=approval.requester)
        if defaults.authorize is not None:  # the check reads the requester's objects only
            defaults.authorize(cleaned, approval.requester)
    except registry.ArgumentsInvalid:
        return ""
    return said(defaults, cleaned, approval.requester)
