"""GET/DELETE /api/auth/token/: the caller's API token (agui_project/auth.py says how tokens expire)."""

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.views import APIView

from agui_project.auth import token_expires_at
from agui_project.serializers import ErrorSerializer


class TokenInfoSerializer(serializers.Serializer):
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True, help_text="null: the token does not expire")


class TokenView(APIView):
    """GET: when the caller's token was made and when it expires. DELETE: revoke it (204); signed in
    with a session, DELETE revokes the account's token."""

    permission_classes = [permissions.IsAuthenticated]
    serializer_class = TokenInfoSerializer

    def _token(self, request):
        if isinstance(request.auth, Token):
            return request.auth
        return Token.objects.filter(user=request.user).first()

    @extend_schema(responses={200: TokenInfoSerializer, 404: OpenApiResponse(
        ErrorSerializer, description="no_token: signed in with a session, the account has no API token")})
    def get(self, request):
        token = self._token(request)
        if token is None:
            return Response({"message": _("This account has no API token."), "code": "no_token"},
                            status=status.HTTP_404_NOT_FOUND)
        return Response(TokenInfoSerializer({"created": token.created, "expires_at": token_expires_at(token)}).data)

    def delete(self, request):
        Token.objects.filter(user=request.user).delete()  # one token per user (DRF's OneToOne)
        return Response(status=status.HTTP_204_NO_CONTENT)
