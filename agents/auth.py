from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    """`Authorization: Bearer <key>` with DRF's tokens (AG-UI clients send Bearer)."""

    keyword = "Bearer"
