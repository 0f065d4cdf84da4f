from .base_model import BaseModel
from .fragments import NetworkFields


class Networks(BaseModel):
    networks: list["NetworksNetworks"]


class NetworksNetworks(NetworkFields):
    pass


Networks.model_rebuild()
