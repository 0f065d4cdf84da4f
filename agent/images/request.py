"""A validated EnsureTemplate request: which image, from where, with what checksum, onto which storage."""

from __future__ import annotations

from dataclasses import dataclass

from agentclient.templates import check_image_name, check_storage_id
from agentclient.urlpolicy import parse_checksum


class InvalidRequest(ValueError):
    """The request itself is malformed: image name, URL, checksum or storage."""


@dataclass(frozen=True)
class EnsureRequest:
    """A validated EnsureTemplate request."""

    image: str
    url: str
    algorithm: str
    digest: str
    storage: str

    @classmethod
    def parse(cls, image: str, url: str, checksum: str, storage: str) -> EnsureRequest:
        """Validate the request's fields; InvalidRequest names the first bad one."""
        try:
            check_image_name(image)
            check_storage_id(storage)
            algorithm, digest = parse_checksum(checksum)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        if not url:
            raise InvalidRequest("the image URL is empty")
        return cls(image=image, url=url, algorithm=algorithm, digest=digest, storage=storage)

    @property
    def key(self) -> tuple[str, str]:
        return (self.image, self.storage)

    @property
    def checksum(self) -> str:
        return f"{self.algorithm}:{self.digest}"
