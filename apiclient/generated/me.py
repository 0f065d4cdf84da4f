from .base_model import BaseModel


class Me(BaseModel):
    me: "MeMe"


class MeMe(BaseModel):
    subject: str
    name: str
    email: str
    roles: list[str]
    vdcs: list[str]


Me.model_rebuild()
