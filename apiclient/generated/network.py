from typing import Optional

from .base_model import BaseModel
from .fragments import NetworkFields


class Network(BaseModel):
    network: Optional["NetworkNetwork"]


class NetworkNetwork(NetworkFields):
    pass


Network.model_rebuild()
