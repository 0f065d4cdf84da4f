"""Connect errors, with the HTTP status the Connect protocol gives each code."""

from __future__ import annotations

from django.http import JsonResponse

STATUS = {
    "canceled": 499,
    "unknown": 500,
    "invalid_argument": 400,
    "deadline_exceeded": 504,
    "not_found": 404,
    "already_exists": 409,
    "permission_denied": 403,
    "resource_exhausted": 429,
    "failed_precondition": 400,
    "aborted": 409,
    "out_of_range": 400,
    "unimplemented": 501,
    "internal": 500,
    "unavailable": 503,
    "data_loss": 500,
    "unauthenticated": 401,
}


class ConnectError(Exception):
    def __init__(self, code: str, message: str) -> None:
        assert code in STATUS, code
        super().__init__(message)
        self.code = code
        self.message = message

    def response(self) -> JsonResponse:
        return JsonResponse({"code": self.code, "message": self.message}, status=STATUS[self.code])

    def gateway_response(self) -> JsonResponse:
        """The error as Zitadel's v1 REST API (grpc-gateway) answers it: gRPC's numeric code."""
        number = list(STATUS).index(self.code) + 1  # STATUS lists the codes in gRPC's order, from 1
        return JsonResponse(
            {"code": number, "message": self.message, "details": []}, status=STATUS[self.code]
        )
