"""The CSI driver's Identity service: its name and version, what it serves, and whether it is ready."""

from __future__ import annotations

from importlib import metadata

import grpc
from google.protobuf.wrappers_pb2 import BoolValue

from providers.csi.proto import csi_pb2 as csi
from providers.csi.proto import csi_pb2_grpc

# The driver's name: a StorageClass's provisioner and a PersistentVolume's spec.csi.driver.
DRIVER = "csi.flexplane.io"


def version() -> str:
    """flex.plane's version (``0.0.0`` in a tree not installed)."""
    try:
        return metadata.version("flexplane")
    except metadata.PackageNotFoundError:
        return "0.0.0"


class IdentityService(csi_pb2_grpc.IdentityServicer):
    """What a node plugin (and, with ``controller``, the controller) says of itself."""

    def __init__(self, *, controller: bool = False) -> None:
        self.controller = controller

    def GetPluginInfo(
        self, request: csi.GetPluginInfoRequest, context: grpc.ServicerContext
    ) -> csi.GetPluginInfoResponse:
        return csi.GetPluginInfoResponse(name=DRIVER, vendor_version=version())

    def GetPluginCapabilities(
        self, request: csi.GetPluginCapabilitiesRequest, context: grpc.ServicerContext
    ) -> csi.GetPluginCapabilitiesResponse:
        service = csi.PluginCapability.Service
        capabilities = [
            csi.PluginCapability(service=service(type=service.VOLUME_ACCESSIBILITY_CONSTRAINTS)),
            csi.PluginCapability(
                volume_expansion=csi.PluginCapability.VolumeExpansion(
                    type=csi.PluginCapability.VolumeExpansion.ONLINE
                )
            ),
        ]
        if self.controller:
            capabilities.insert(0, csi.PluginCapability(service=service(type=service.CONTROLLER_SERVICE)))
        return csi.GetPluginCapabilitiesResponse(capabilities=capabilities)

    def Probe(self, request: csi.ProbeRequest, context: grpc.ServicerContext) -> csi.ProbeResponse:
        return csi.ProbeResponse(ready=BoolValue(value=True))
