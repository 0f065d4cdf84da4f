from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from .base_client import BaseClient
from .base_model import UNSET, UnsetType
from .input_types import (
    CreateKubernetesClusterInput,
    CreateNetworkInput,
    CreateSecurityGroupInput,
    CreateVirtualMachineInput,
    GatewayFirewallRuleInput,
    PortForwardInput,
    ResizeVirtualMachineInput,
    UpdateSecurityGroupInput,
    VirtualMachineFilter,
)

if TYPE_CHECKING:
    from .add_gateway_firewall_rule import AddGatewayFirewallRule
    from .add_port_forward import AddPortForward
    from .allocate_public_ip import AllocatePublicIp
    from .assign_security_groups import AssignSecurityGroups
    from .attach_network import AttachNetwork
    from .attach_public_ip import AttachPublicIp
    from .attach_volume import AttachVolume
    from .cloud_node_virtual_machine import CloudNodeVirtualMachine
    from .cloud_node_virtual_machines import CloudNodeVirtualMachines
    from .create_edge_gateway import CreateEdgeGateway
    from .create_kubernetes_cluster import CreateKubernetesCluster
    from .create_network import CreateNetwork
    from .create_security_group import CreateSecurityGroup
    from .create_service_account import CreateServiceAccount
    from .create_snapshot import CreateSnapshot
    from .create_virtual_machine import CreateVirtualMachine
    from .create_volume import CreateVolume
    from .create_volume_from_snapshot import CreateVolumeFromSnapshot
    from .create_volume_snapshot import CreateVolumeSnapshot
    from .delete_edge_gateway import DeleteEdgeGateway
    from .delete_kubernetes_cluster import DeleteKubernetesCluster
    from .delete_network import DeleteNetwork
    from .delete_security_group import DeleteSecurityGroup
    from .delete_snapshot import DeleteSnapshot
    from .delete_virtual_machine import DeleteVirtualMachine
    from .delete_volume import DeleteVolume
    from .delete_volume_snapshot import DeleteVolumeSnapshot
    from .detach_network import DetachNetwork
    from .detach_public_ip import DetachPublicIp
    from .detach_volume import DetachVolume
    from .edge_gateways import EdgeGateways
    from .kubeconfig import Kubeconfig
    from .kubernetes_cluster import KubernetesCluster
    from .kubernetes_clusters import KubernetesClusters
    from .kubernetes_versions import KubernetesVersions
    from .me import Me
    from .network import Network
    from .networks import Networks
    from .public_ips import PublicIps
    from .reboot_virtual_machine import RebootVirtualMachine
    from .release_public_ip import ReleasePublicIp
    from .remove_gateway_firewall_rule import RemoveGatewayFirewallRule
    from .remove_port_forward import RemovePortForward
    from .resize_virtual_machine import ResizeVirtualMachine
    from .resize_volume import ResizeVolume
    from .revoke_service_account import RevokeServiceAccount
    from .rollback_snapshot import RollbackSnapshot
    from .scale_node_pool import ScaleNodePool
    from .security_groups import SecurityGroups
    from .service_accounts import ServiceAccounts
    from .shutdown_virtual_machine import ShutdownVirtualMachine
    from .snapshots import Snapshots
    from .start_virtual_machine import StartVirtualMachine
    from .stop_virtual_machine import StopVirtualMachine
    from .task import Task
    from .tasks import Tasks
    from .update_security_group import UpdateSecurityGroup
    from .upgrade_kubernetes_cluster import UpgradeKubernetesCluster
    from .vdc import Vdc
    from .vdcs import Vdcs
    from .virtual_machine import VirtualMachine
    from .virtual_machines import VirtualMachines
    from .volume import Volume
    from .volume_snapshot import VolumeSnapshot
    from .volume_snapshots import VolumeSnapshots
    from .volume_storage_profiles import VolumeStorageProfiles
    from .volumes import Volumes


def gql(q: str) -> str:
    return q


class GeneratedClient(BaseClient):
    def cloud_node_virtual_machines(
        self,
        first: int | UnsetType | None = UNSET,
        after: str | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> CloudNodeVirtualMachines:
        from .cloud_node_virtual_machines import CloudNodeVirtualMachines

        query = gql("""
            query CloudNodeVirtualMachines($first: Int, $after: String) {
              virtualMachines(first: $first, after: $after) {
                edges {
                  node {
                    id
                    name
                    status
                    zone
                    host
                    computeProfile
                  }
                }
                pageInfo {
                  hasNextPage
                  endCursor
                }
              }
            }
            """)
        variables: dict[str, object] = {"first": first, "after": after}
        response = self.execute(
            query=query,
            operation_name="CloudNodeVirtualMachines",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CloudNodeVirtualMachines.model_validate(data)

    def cloud_node_virtual_machine(self, id: str, **kwargs: Any) -> CloudNodeVirtualMachine:
        from .cloud_node_virtual_machine import CloudNodeVirtualMachine

        query = gql("""
            query CloudNodeVirtualMachine($id: ID!) {
              virtualMachine(id: $id) {
                id
                name
                zone
                host
                computeProfile
                smbiosUuid
                nics {
                  key
                  ipAddress
                }
              }
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(
            query=query,
            operation_name="CloudNodeVirtualMachine",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CloudNodeVirtualMachine.model_validate(data)

    def add_gateway_firewall_rule(
        self,
        input: GatewayFirewallRuleInput,
        zone: str | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> AddGatewayFirewallRule:
        from .add_gateway_firewall_rule import AddGatewayFirewallRule

        query = gql("""
            mutation AddGatewayFirewallRule($zone: String, $input: GatewayFirewallRuleInput!) {
              addGatewayFirewallRule(zone: $zone, input: $input) {
                edgeGateway {
                  ...EdgeGatewayFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment EdgeGatewayFields on EdgeGateway {
              id
              vdc
              zone
              node
              generation
              appliedGeneration
              applied
              uplinkAddress
              networks
              publicIps {
                ...PublicIpFields
              }
              firewallRules {
                position
                direction
                action
                protocol
                source
                destination
                portFrom
                portTo
                description
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {"zone": zone, "input": input}
        response = self.execute(
            query=query,
            operation_name="AddGatewayFirewallRule",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return AddGatewayFirewallRule.model_validate(data)

    def remove_gateway_firewall_rule(
        self,
        position: int,
        zone: str | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> RemoveGatewayFirewallRule:
        from .remove_gateway_firewall_rule import RemoveGatewayFirewallRule

        query = gql("""
            mutation RemoveGatewayFirewallRule($zone: String, $position: Int!) {
              removeGatewayFirewallRule(zone: $zone, position: $position) {
                edgeGateway {
                  ...EdgeGatewayFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment EdgeGatewayFields on EdgeGateway {
              id
              vdc
              zone
              node
              generation
              appliedGeneration
              applied
              uplinkAddress
              networks
              publicIps {
                ...PublicIpFields
              }
              firewallRules {
                position
                direction
                action
                protocol
                source
                destination
                portFrom
                portTo
                description
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {"zone": zone, "position": position}
        response = self.execute(
            query=query,
            operation_name="RemoveGatewayFirewallRule",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return RemoveGatewayFirewallRule.model_validate(data)

    def kubernetes_clusters(self, **kwargs: Any) -> KubernetesClusters:
        from .kubernetes_clusters import KubernetesClusters

        query = gql("""
            query KubernetesClusters {
              kubernetesClusters {
                ...KubernetesClusterFields
              }
            }

            fragment KubernetesClusterFields on KubernetesCluster {
              name
              vdc
              version
              phase
              endpoint
              network
              createdAt
              controlPlane {
                replicas
                readyReplicas
                version
                desiredVersion
                initialized
              }
              health {
                healthy
                apiServerUp
                apiServerReason
                apiServerMessage
                etcdMembers
                etcdMembersReady
                konnectivityAgents
                konnectivityAgentsConnected
              }
              nodePools {
                name
                computeProfile
                storageProfile
                network
                count
                ready
                version
              }
              conditions {
                object
                type
                status
                reason
                message
              }
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(
            query=query,
            operation_name="KubernetesClusters",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return KubernetesClusters.model_validate(data)

    def kubernetes_cluster(self, name: str, **kwargs: Any) -> KubernetesCluster:
        from .kubernetes_cluster import KubernetesCluster

        query = gql("""
            query KubernetesCluster($name: String!) {
              kubernetesCluster(name: $name) {
                ...KubernetesClusterFields
              }
            }

            fragment KubernetesClusterFields on KubernetesCluster {
              name
              vdc
              version
              phase
              endpoint
              network
              createdAt
              controlPlane {
                replicas
                readyReplicas
                version
                desiredVersion
                initialized
              }
              health {
                healthy
                apiServerUp
                apiServerReason
                apiServerMessage
                etcdMembers
                etcdMembersReady
                konnectivityAgents
                konnectivityAgentsConnected
              }
              nodePools {
                name
                computeProfile
                storageProfile
                network
                count
                ready
                version
              }
              conditions {
                object
                type
                status
                reason
                message
              }
            }
            """)
        variables: dict[str, object] = {"name": name}
        response = self.execute(
            query=query,
            operation_name="KubernetesCluster",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return KubernetesCluster.model_validate(data)

    def kubernetes_versions(self, **kwargs: Any) -> KubernetesVersions:
        from .kubernetes_versions import KubernetesVersions

        query = gql("""
            query KubernetesVersions {
              kubernetesVersions {
                version
                image
              }
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(
            query=query,
            operation_name="KubernetesVersions",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return KubernetesVersions.model_validate(data)

    def kubeconfig(self, cluster: str, **kwargs: Any) -> Kubeconfig:
        from .kubeconfig import Kubeconfig

        query = gql("""
            query Kubeconfig($cluster: String!) {
              kubeconfig(cluster: $cluster) {
                cluster
                endpoint
                kubeconfig
                expiresAt
              }
            }
            """)
        variables: dict[str, object] = {"cluster": cluster}
        response = self.execute(query=query, operation_name="Kubeconfig", variables=variables, **kwargs)
        data = self.get_data(response)
        return Kubeconfig.model_validate(data)

    def create_kubernetes_cluster(
        self, input: CreateKubernetesClusterInput, **kwargs: Any
    ) -> CreateKubernetesCluster:
        from .create_kubernetes_cluster import CreateKubernetesCluster

        query = gql("""
            mutation CreateKubernetesCluster($input: CreateKubernetesClusterInput!) {
              createKubernetesCluster(input: $input) {
                kubernetesCluster {
                  ...KubernetesClusterFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment KubernetesClusterFields on KubernetesCluster {
              name
              vdc
              version
              phase
              endpoint
              network
              createdAt
              controlPlane {
                replicas
                readyReplicas
                version
                desiredVersion
                initialized
              }
              health {
                healthy
                apiServerUp
                apiServerReason
                apiServerMessage
                etcdMembers
                etcdMembersReady
                konnectivityAgents
                konnectivityAgentsConnected
              }
              nodePools {
                name
                computeProfile
                storageProfile
                network
                count
                ready
                version
              }
              conditions {
                object
                type
                status
                reason
                message
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="CreateKubernetesCluster",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CreateKubernetesCluster.model_validate(data)

    def scale_node_pool(self, cluster: str, pool: str, count: int, **kwargs: Any) -> ScaleNodePool:
        from .scale_node_pool import ScaleNodePool

        query = gql("""
            mutation ScaleNodePool($cluster: String!, $pool: String!, $count: Int!) {
              scaleNodePool(cluster: $cluster, pool: $pool, count: $count) {
                kubernetesCluster {
                  ...KubernetesClusterFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment KubernetesClusterFields on KubernetesCluster {
              name
              vdc
              version
              phase
              endpoint
              network
              createdAt
              controlPlane {
                replicas
                readyReplicas
                version
                desiredVersion
                initialized
              }
              health {
                healthy
                apiServerUp
                apiServerReason
                apiServerMessage
                etcdMembers
                etcdMembersReady
                konnectivityAgents
                konnectivityAgentsConnected
              }
              nodePools {
                name
                computeProfile
                storageProfile
                network
                count
                ready
                version
              }
              conditions {
                object
                type
                status
                reason
                message
              }
            }
            """)
        variables: dict[str, object] = {
            "cluster": cluster,
            "pool": pool,
            "count": count,
        }
        response = self.execute(query=query, operation_name="ScaleNodePool", variables=variables, **kwargs)
        data = self.get_data(response)
        return ScaleNodePool.model_validate(data)

    def upgrade_kubernetes_cluster(
        self, cluster: str, version: str, **kwargs: Any
    ) -> UpgradeKubernetesCluster:
        from .upgrade_kubernetes_cluster import UpgradeKubernetesCluster

        query = gql("""
            mutation UpgradeKubernetesCluster($cluster: String!, $version: String!) {
              upgradeKubernetesCluster(cluster: $cluster, version: $version) {
                kubernetesCluster {
                  ...KubernetesClusterFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment KubernetesClusterFields on KubernetesCluster {
              name
              vdc
              version
              phase
              endpoint
              network
              createdAt
              controlPlane {
                replicas
                readyReplicas
                version
                desiredVersion
                initialized
              }
              health {
                healthy
                apiServerUp
                apiServerReason
                apiServerMessage
                etcdMembers
                etcdMembersReady
                konnectivityAgents
                konnectivityAgentsConnected
              }
              nodePools {
                name
                computeProfile
                storageProfile
                network
                count
                ready
                version
              }
              conditions {
                object
                type
                status
                reason
                message
              }
            }
            """)
        variables: dict[str, object] = {"cluster": cluster, "version": version}
        response = self.execute(
            query=query,
            operation_name="UpgradeKubernetesCluster",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return UpgradeKubernetesCluster.model_validate(data)

    def delete_kubernetes_cluster(self, cluster: str, **kwargs: Any) -> DeleteKubernetesCluster:
        from .delete_kubernetes_cluster import DeleteKubernetesCluster

        query = gql("""
            mutation DeleteKubernetesCluster($cluster: String!) {
              deleteKubernetesCluster(cluster: $cluster) {
                errors {
                  field
                  message
                  code
                }
              }
            }
            """)
        variables: dict[str, object] = {"cluster": cluster}
        response = self.execute(
            query=query,
            operation_name="DeleteKubernetesCluster",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return DeleteKubernetesCluster.model_validate(data)

    def edge_gateways(self, **kwargs: Any) -> EdgeGateways:
        from .edge_gateways import EdgeGateways

        query = gql("""
            query EdgeGateways {
              edgeGateways {
                ...EdgeGatewayFields
              }
            }

            fragment EdgeGatewayFields on EdgeGateway {
              id
              vdc
              zone
              node
              generation
              appliedGeneration
              applied
              uplinkAddress
              networks
              publicIps {
                ...PublicIpFields
              }
              firewallRules {
                position
                direction
                action
                protocol
                source
                destination
                portFrom
                portTo
                description
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(query=query, operation_name="EdgeGateways", variables=variables, **kwargs)
        data = self.get_data(response)
        return EdgeGateways.model_validate(data)

    def public_ips(self, **kwargs: Any) -> PublicIps:
        from .public_ips import PublicIps

        query = gql("""
            query PublicIps {
              publicIps {
                ...PublicIpFields
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(query=query, operation_name="PublicIps", variables=variables, **kwargs)
        data = self.get_data(response)
        return PublicIps.model_validate(data)

    def create_edge_gateway(self, zone: str | UnsetType | None = UNSET, **kwargs: Any) -> CreateEdgeGateway:
        from .create_edge_gateway import CreateEdgeGateway

        query = gql("""
            mutation CreateEdgeGateway($zone: String) {
              createEdgeGateway(zone: $zone) {
                edgeGateway {
                  ...EdgeGatewayFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment EdgeGatewayFields on EdgeGateway {
              id
              vdc
              zone
              node
              generation
              appliedGeneration
              applied
              uplinkAddress
              networks
              publicIps {
                ...PublicIpFields
              }
              firewallRules {
                position
                direction
                action
                protocol
                source
                destination
                portFrom
                portTo
                description
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {"zone": zone}
        response = self.execute(
            query=query,
            operation_name="CreateEdgeGateway",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CreateEdgeGateway.model_validate(data)

    def delete_edge_gateway(self, zone: str | UnsetType | None = UNSET, **kwargs: Any) -> DeleteEdgeGateway:
        from .delete_edge_gateway import DeleteEdgeGateway

        query = gql("""
            mutation DeleteEdgeGateway($zone: String) {
              deleteEdgeGateway(zone: $zone) {
                errors {
                  field
                  message
                  code
                }
              }
            }
            """)
        variables: dict[str, object] = {"zone": zone}
        response = self.execute(
            query=query,
            operation_name="DeleteEdgeGateway",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return DeleteEdgeGateway.model_validate(data)

    def allocate_public_ip(self, zone: str | UnsetType | None = UNSET, **kwargs: Any) -> AllocatePublicIp:
        from .allocate_public_ip import AllocatePublicIp

        query = gql("""
            mutation AllocatePublicIp($zone: String) {
              allocatePublicIp(zone: $zone) {
                publicIp {
                  ...PublicIpFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {"zone": zone}
        response = self.execute(
            query=query,
            operation_name="AllocatePublicIp",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return AllocatePublicIp.model_validate(data)

    def release_public_ip(self, address: str, **kwargs: Any) -> ReleasePublicIp:
        from .release_public_ip import ReleasePublicIp

        query = gql("""
            mutation ReleasePublicIp($address: String!) {
              releasePublicIp(address: $address) {
                publicIp {
                  ...PublicIpFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {"address": address}
        response = self.execute(query=query, operation_name="ReleasePublicIp", variables=variables, **kwargs)
        data = self.get_data(response)
        return ReleasePublicIp.model_validate(data)

    def attach_public_ip(self, address: str, to_address: str, **kwargs: Any) -> AttachPublicIp:
        from .attach_public_ip import AttachPublicIp

        query = gql("""
            mutation AttachPublicIp($address: String!, $toAddress: String!) {
              attachPublicIp(address: $address, toAddress: $toAddress) {
                publicIp {
                  ...PublicIpFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {"address": address, "toAddress": to_address}
        response = self.execute(query=query, operation_name="AttachPublicIp", variables=variables, **kwargs)
        data = self.get_data(response)
        return AttachPublicIp.model_validate(data)

    def detach_public_ip(self, address: str, **kwargs: Any) -> DetachPublicIp:
        from .detach_public_ip import DetachPublicIp

        query = gql("""
            mutation DetachPublicIp($address: String!) {
              detachPublicIp(address: $address) {
                publicIp {
                  ...PublicIpFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {"address": address}
        response = self.execute(query=query, operation_name="DetachPublicIp", variables=variables, **kwargs)
        data = self.get_data(response)
        return DetachPublicIp.model_validate(data)

    def add_port_forward(self, input: PortForwardInput, **kwargs: Any) -> AddPortForward:
        from .add_port_forward import AddPortForward

        query = gql("""
            mutation AddPortForward($input: PortForwardInput!) {
              addPortForward(input: $input) {
                publicIp {
                  ...PublicIpFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(query=query, operation_name="AddPortForward", variables=variables, **kwargs)
        data = self.get_data(response)
        return AddPortForward.model_validate(data)

    def remove_port_forward(
        self, public_ip: str, protocol: str, port: int, **kwargs: Any
    ) -> RemovePortForward:
        from .remove_port_forward import RemovePortForward

        query = gql("""
            mutation RemovePortForward($publicIp: String!, $protocol: String!, $port: Int!) {
              removePortForward(publicIp: $publicIp, protocol: $protocol, port: $port) {
                publicIp {
                  ...PublicIpFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment PortForwardFields on PortForward {
              publicIp
              protocol
              port
              toAddress
              toPort
            }

            fragment PublicIpFields on PublicIp {
              address
              zone
              vdc
              natTo
              portForwards {
                ...PortForwardFields
              }
            }
            """)
        variables: dict[str, object] = {
            "publicIp": public_ip,
            "protocol": protocol,
            "port": port,
        }
        response = self.execute(
            query=query,
            operation_name="RemovePortForward",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return RemovePortForward.model_validate(data)

    def networks(self, **kwargs: Any) -> Networks:
        from .networks import Networks

        query = gql("""
            query Networks {
              networks {
                ...NetworkFields
              }
            }

            fragment NetworkFields on Network {
              id
              name
              zone
              vdc
              cidr
              gateway
              dns
              vnet
              isDefault
              pending
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(query=query, operation_name="Networks", variables=variables, **kwargs)
        data = self.get_data(response)
        return Networks.model_validate(data)

    def network(self, id: str, **kwargs: Any) -> Network:
        from .network import Network

        query = gql("""
            query Network($id: ID!) {
              network(id: $id) {
                ...NetworkFields
              }
            }

            fragment NetworkFields on Network {
              id
              name
              zone
              vdc
              cidr
              gateway
              dns
              vnet
              isDefault
              pending
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(query=query, operation_name="Network", variables=variables, **kwargs)
        data = self.get_data(response)
        return Network.model_validate(data)

    def create_network(self, input: CreateNetworkInput, **kwargs: Any) -> CreateNetwork:
        from .create_network import CreateNetwork

        query = gql("""
            mutation CreateNetwork($input: CreateNetworkInput!) {
              createNetwork(input: $input) {
                network {
                  ...NetworkFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment NetworkFields on Network {
              id
              name
              zone
              vdc
              cidr
              gateway
              dns
              vnet
              isDefault
              pending
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(query=query, operation_name="CreateNetwork", variables=variables, **kwargs)
        data = self.get_data(response)
        return CreateNetwork.model_validate(data)

    def delete_network(self, id: str, **kwargs: Any) -> DeleteNetwork:
        from .delete_network import DeleteNetwork

        query = gql("""
            mutation DeleteNetwork($id: ID!) {
              deleteNetwork(id: $id) {
                network {
                  ...NetworkFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment NetworkFields on Network {
              id
              name
              zone
              vdc
              cidr
              gateway
              dns
              vnet
              isDefault
              pending
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(query=query, operation_name="DeleteNetwork", variables=variables, **kwargs)
        data = self.get_data(response)
        return DeleteNetwork.model_validate(data)

    def attach_network(
        self,
        vm: str,
        network: str,
        ip_address: str | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> AttachNetwork:
        from .attach_network import AttachNetwork

        query = gql("""
            mutation AttachNetwork($vm: ID!, $network: String!, $ipAddress: String) {
              attachNetwork(vm: $vm, network: $network, ipAddress: $ipAddress) {
                errors {
                  field
                  message
                  code
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "vm": vm,
            "network": network,
            "ipAddress": ip_address,
        }
        response = self.execute(query=query, operation_name="AttachNetwork", variables=variables, **kwargs)
        data = self.get_data(response)
        return AttachNetwork.model_validate(data)

    def detach_network(self, vm: str, network: str, **kwargs: Any) -> DetachNetwork:
        from .detach_network import DetachNetwork

        query = gql("""
            mutation DetachNetwork($vm: ID!, $network: String!) {
              detachNetwork(vm: $vm, network: $network) {
                errors {
                  field
                  message
                  code
                }
              }
            }
            """)
        variables: dict[str, object] = {"vm": vm, "network": network}
        response = self.execute(query=query, operation_name="DetachNetwork", variables=variables, **kwargs)
        data = self.get_data(response)
        return DetachNetwork.model_validate(data)

    def security_groups(self, **kwargs: Any) -> SecurityGroups:
        from .security_groups import SecurityGroups

        query = gql("""
            query SecurityGroups {
              securityGroups {
                ...SecurityGroupFields
              }
            }

            fragment SecurityGroupFields on SecurityGroup {
              name
              vdc
              description
              rules {
                direction
                protocol
                ports
                cidr
                group
                vdcNetworks
                description
              }
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(query=query, operation_name="SecurityGroups", variables=variables, **kwargs)
        data = self.get_data(response)
        return SecurityGroups.model_validate(data)

    def create_security_group(self, input: CreateSecurityGroupInput, **kwargs: Any) -> CreateSecurityGroup:
        from .create_security_group import CreateSecurityGroup

        query = gql("""
            mutation CreateSecurityGroup($input: CreateSecurityGroupInput!) {
              createSecurityGroup(input: $input) {
                securityGroup {
                  ...SecurityGroupFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment SecurityGroupFields on SecurityGroup {
              name
              vdc
              description
              rules {
                direction
                protocol
                ports
                cidr
                group
                vdcNetworks
                description
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="CreateSecurityGroup",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CreateSecurityGroup.model_validate(data)

    def update_security_group(
        self, name: str, input: UpdateSecurityGroupInput, **kwargs: Any
    ) -> UpdateSecurityGroup:
        from .update_security_group import UpdateSecurityGroup

        query = gql("""
            mutation UpdateSecurityGroup($name: String!, $input: UpdateSecurityGroupInput!) {
              updateSecurityGroup(name: $name, input: $input) {
                securityGroup {
                  ...SecurityGroupFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment SecurityGroupFields on SecurityGroup {
              name
              vdc
              description
              rules {
                direction
                protocol
                ports
                cidr
                group
                vdcNetworks
                description
              }
            }
            """)
        variables: dict[str, object] = {"name": name, "input": input}
        response = self.execute(
            query=query,
            operation_name="UpdateSecurityGroup",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return UpdateSecurityGroup.model_validate(data)

    def delete_security_group(self, name: str, **kwargs: Any) -> DeleteSecurityGroup:
        from .delete_security_group import DeleteSecurityGroup

        query = gql("""
            mutation DeleteSecurityGroup($name: String!) {
              deleteSecurityGroup(name: $name) {
                securityGroup {
                  ...SecurityGroupFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment SecurityGroupFields on SecurityGroup {
              name
              vdc
              description
              rules {
                direction
                protocol
                ports
                cidr
                group
                vdcNetworks
                description
              }
            }
            """)
        variables: dict[str, object] = {"name": name}
        response = self.execute(
            query=query,
            operation_name="DeleteSecurityGroup",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return DeleteSecurityGroup.model_validate(data)

    def assign_security_groups(self, vm: str, groups: list[str], **kwargs: Any) -> AssignSecurityGroups:
        from .assign_security_groups import AssignSecurityGroups

        query = gql("""
            mutation AssignSecurityGroups($vm: ID!, $groups: [String!]!) {
              assignSecurityGroups(vm: $vm, groups: $groups) {
                securityGroups
                errors {
                  field
                  message
                  code
                }
              }
            }
            """)
        variables: dict[str, object] = {"vm": vm, "groups": groups}
        response = self.execute(
            query=query,
            operation_name="AssignSecurityGroups",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return AssignSecurityGroups.model_validate(data)

    def service_accounts(self, vdc: str | UnsetType | None = UNSET, **kwargs: Any) -> ServiceAccounts:
        from .service_accounts import ServiceAccounts

        query = gql("""
            query ServiceAccounts($vdc: ID) {
              serviceAccounts(vdc: $vdc) {
                ...ServiceAccountFields
              }
            }

            fragment ServiceAccountFields on ServiceAccount {
              id
              name
              vdc
              created
              expires
              createdBy
            }
            """)
        variables: dict[str, object] = {"vdc": vdc}
        response = self.execute(query=query, operation_name="ServiceAccounts", variables=variables, **kwargs)
        data = self.get_data(response)
        return ServiceAccounts.model_validate(data)

    def create_service_account(
        self, vdc: str, name: str, expires_at: datetime, **kwargs: Any
    ) -> CreateServiceAccount:
        from .create_service_account import CreateServiceAccount

        query = gql("""
            mutation CreateServiceAccount($vdc: ID!, $name: String!, $expiresAt: DateTime!) {
              createServiceAccount(vdc: $vdc, name: $name, expiresAt: $expiresAt) {
                serviceAccount {
                  ...ServiceAccountFields
                }
                key
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment ServiceAccountFields on ServiceAccount {
              id
              name
              vdc
              created
              expires
              createdBy
            }
            """)
        variables: dict[str, object] = {
            "vdc": vdc,
            "name": name,
            "expiresAt": expires_at,
        }
        response = self.execute(
            query=query,
            operation_name="CreateServiceAccount",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CreateServiceAccount.model_validate(data)

    def revoke_service_account(self, id: str, **kwargs: Any) -> RevokeServiceAccount:
        from .revoke_service_account import RevokeServiceAccount

        query = gql("""
            mutation RevokeServiceAccount($id: ID!) {
              revokeServiceAccount(id: $id) {
                serviceAccount {
                  ...ServiceAccountFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment ServiceAccountFields on ServiceAccount {
              id
              name
              vdc
              created
              expires
              createdBy
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(
            query=query,
            operation_name="RevokeServiceAccount",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return RevokeServiceAccount.model_validate(data)

    def snapshots(self, vm: str, **kwargs: Any) -> Snapshots:
        from .snapshots import Snapshots

        query = gql("""
            query Snapshots($vm: ID!) {
              snapshots(vm: $vm) {
                ...SnapshotFields
              }
            }

            fragment SnapshotFields on Snapshot {
              vm
              name
              description
              takenAt
              includesMemory
              parent
              current
              state
            }
            """)
        variables: dict[str, object] = {"vm": vm}
        response = self.execute(query=query, operation_name="Snapshots", variables=variables, **kwargs)
        data = self.get_data(response)
        return Snapshots.model_validate(data)

    def create_snapshot(
        self,
        vm: str,
        name: str,
        description: str | UnsetType | None = UNSET,
        include_memory: bool | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> CreateSnapshot:
        from .create_snapshot import CreateSnapshot

        query = gql("""
            mutation CreateSnapshot($vm: ID!, $name: String!, $description: String, $includeMemory: Boolean) {
              createSnapshot(
                vm: $vm
                name: $name
                description: $description
                includeMemory: $includeMemory
              ) {
                snapshot {
                  ...SnapshotFields
                }
                task {
                  ...TaskFields
                }
                message
                errors {
                  ...SnapshotErrorFields
                }
              }
            }

            fragment SnapshotErrorFields on SnapshotError {
              field
              message
              code
            }

            fragment SnapshotFields on Snapshot {
              vm
              name
              description
              takenAt
              includesMemory
              parent
              current
              state
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }
            """)
        variables: dict[str, object] = {
            "vm": vm,
            "name": name,
            "description": description,
            "includeMemory": include_memory,
        }
        response = self.execute(query=query, operation_name="CreateSnapshot", variables=variables, **kwargs)
        data = self.get_data(response)
        return CreateSnapshot.model_validate(data)

    def rollback_snapshot(
        self,
        vm: str,
        name: str,
        start: bool | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> RollbackSnapshot:
        from .rollback_snapshot import RollbackSnapshot

        query = gql("""
            mutation RollbackSnapshot($vm: ID!, $name: String!, $start: Boolean) {
              rollbackSnapshot(vm: $vm, name: $name, start: $start) {
                snapshot {
                  ...SnapshotFields
                }
                task {
                  ...TaskFields
                }
                message
                errors {
                  ...SnapshotErrorFields
                }
              }
            }

            fragment SnapshotErrorFields on SnapshotError {
              field
              message
              code
            }

            fragment SnapshotFields on Snapshot {
              vm
              name
              description
              takenAt
              includesMemory
              parent
              current
              state
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }
            """)
        variables: dict[str, object] = {"vm": vm, "name": name, "start": start}
        response = self.execute(
            query=query,
            operation_name="RollbackSnapshot",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return RollbackSnapshot.model_validate(data)

    def delete_snapshot(self, vm: str, name: str, **kwargs: Any) -> DeleteSnapshot:
        from .delete_snapshot import DeleteSnapshot

        query = gql("""
            mutation DeleteSnapshot($vm: ID!, $name: String!) {
              deleteSnapshot(vm: $vm, name: $name) {
                task {
                  ...TaskFields
                }
                message
                errors {
                  ...SnapshotErrorFields
                }
              }
            }

            fragment SnapshotErrorFields on SnapshotError {
              field
              message
              code
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }
            """)
        variables: dict[str, object] = {"vm": vm, "name": name}
        response = self.execute(query=query, operation_name="DeleteSnapshot", variables=variables, **kwargs)
        data = self.get_data(response)
        return DeleteSnapshot.model_validate(data)

    def task(self, id: str, **kwargs: Any) -> Task:
        from .task import Task

        query = gql("""
            query Task($id: ID!) {
              task(id: $id) {
                ...TaskFields
                log
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(query=query, operation_name="Task", variables=variables, **kwargs)
        data = self.get_data(response)
        return Task.model_validate(data)

    def tasks(
        self,
        first: int | UnsetType | None = UNSET,
        vm: str | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> Tasks:
        from .tasks import Tasks

        query = gql("""
            query Tasks($first: Int, $vm: ID) {
              tasks(first: $first, vm: $vm) {
                ...TaskFields
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }
            """)
        variables: dict[str, object] = {"first": first, "vm": vm}
        response = self.execute(query=query, operation_name="Tasks", variables=variables, **kwargs)
        data = self.get_data(response)
        return Tasks.model_validate(data)

    def me(self, **kwargs: Any) -> Me:
        from .me import Me

        query = gql("""
            query Me {
              me {
                subject
                name
                email
                roles
                vdcs
              }
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(query=query, operation_name="Me", variables=variables, **kwargs)
        data = self.get_data(response)
        return Me.model_validate(data)

    def vdcs(self, **kwargs: Any) -> Vdcs:
        from .vdcs import Vdcs

        query = gql("""
            query Vdcs {
              vdcs {
                ...VdcFields
              }
            }

            fragment VdcFields on Vdc {
              id
              name
              description
              organization
              zones
              computeProfiles
              storageProfiles
              images
              snapshotsPerVm
              quota {
                vcpus
                memoryMib
                diskGb
                vms
                networks
                publicIps
              }
              usage {
                vcpus
                memoryMib
                diskGb
                vms
                networks
                publicIps
              }
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(query=query, operation_name="Vdcs", variables=variables, **kwargs)
        data = self.get_data(response)
        return Vdcs.model_validate(data)

    def vdc(self, id: str, **kwargs: Any) -> Vdc:
        from .vdc import Vdc

        query = gql("""
            query Vdc($id: ID!) {
              vdc(id: $id) {
                ...VdcFields
              }
            }

            fragment VdcFields on Vdc {
              id
              name
              description
              organization
              zones
              computeProfiles
              storageProfiles
              images
              snapshotsPerVm
              quota {
                vcpus
                memoryMib
                diskGb
                vms
                networks
                publicIps
              }
              usage {
                vcpus
                memoryMib
                diskGb
                vms
                networks
                publicIps
              }
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(query=query, operation_name="Vdc", variables=variables, **kwargs)
        data = self.get_data(response)
        return Vdc.model_validate(data)

    def virtual_machines(
        self,
        first: int | UnsetType | None = UNSET,
        after: str | UnsetType | None = UNSET,
        filter_: VirtualMachineFilter | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> VirtualMachines:
        from .virtual_machines import VirtualMachines

        query = gql("""
            query VirtualMachines($first: Int, $after: String, $filter: VirtualMachineFilter) {
              virtualMachines(first: $first, after: $after, filter: $filter) {
                edges {
                  cursor
                  node {
                    ...VirtualMachineFields
                  }
                }
                pageInfo {
                  hasNextPage
                  endCursor
                }
              }
            }

            fragment VirtualMachineFields on VirtualMachine {
              id
              name
              status
              zone
              host
              vdc
              cores
              memoryMb
              diskGb
              computeProfile
              storageProfile
              image
              lock
            }
            """)
        variables: dict[str, object] = {
            "first": first,
            "after": after,
            "filter": filter_,
        }
        response = self.execute(query=query, operation_name="VirtualMachines", variables=variables, **kwargs)
        data = self.get_data(response)
        return VirtualMachines.model_validate(data)

    def virtual_machine(self, id: str, **kwargs: Any) -> VirtualMachine:
        from .virtual_machine import VirtualMachine

        query = gql("""
            query VirtualMachine($id: ID!) {
              virtualMachine(id: $id) {
                ...VirtualMachineFields
                ipAddresses
                securityGroups
                nics {
                  key
                  mac
                  ipAddress
                  prefix
                  gateway
                  network {
                    id
                    name
                  }
                }
              }
            }

            fragment VirtualMachineFields on VirtualMachine {
              id
              name
              status
              zone
              host
              vdc
              cores
              memoryMb
              diskGb
              computeProfile
              storageProfile
              image
              lock
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(query=query, operation_name="VirtualMachine", variables=variables, **kwargs)
        data = self.get_data(response)
        return VirtualMachine.model_validate(data)

    def create_virtual_machine(self, input: CreateVirtualMachineInput, **kwargs: Any) -> CreateVirtualMachine:
        from .create_virtual_machine import CreateVirtualMachine

        query = gql("""
            mutation CreateVirtualMachine($input: CreateVirtualMachineInput!) {
              createVirtualMachine(input: $input) {
                virtualMachine {
                  ...VirtualMachineFields
                }
                task {
                  ...TaskFields
                }
                placement {
                  zone
                  host
                  reasons
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VirtualMachineFields on VirtualMachine {
              id
              name
              status
              zone
              host
              vdc
              cores
              memoryMb
              diskGb
              computeProfile
              storageProfile
              image
              lock
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="CreateVirtualMachine",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CreateVirtualMachine.model_validate(data)

    def start_virtual_machine(self, id: str, **kwargs: Any) -> StartVirtualMachine:
        from .start_virtual_machine import StartVirtualMachine

        query = gql("""
            mutation StartVirtualMachine($id: ID!) {
              startVirtualMachine(id: $id) {
                virtualMachine {
                  ...VirtualMachineFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VirtualMachineFields on VirtualMachine {
              id
              name
              status
              zone
              host
              vdc
              cores
              memoryMb
              diskGb
              computeProfile
              storageProfile
              image
              lock
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(
            query=query,
            operation_name="StartVirtualMachine",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return StartVirtualMachine.model_validate(data)

    def stop_virtual_machine(self, id: str, **kwargs: Any) -> StopVirtualMachine:
        from .stop_virtual_machine import StopVirtualMachine

        query = gql("""
            mutation StopVirtualMachine($id: ID!) {
              stopVirtualMachine(id: $id) {
                virtualMachine {
                  ...VirtualMachineFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VirtualMachineFields on VirtualMachine {
              id
              name
              status
              zone
              host
              vdc
              cores
              memoryMb
              diskGb
              computeProfile
              storageProfile
              image
              lock
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(
            query=query,
            operation_name="StopVirtualMachine",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return StopVirtualMachine.model_validate(data)

    def shutdown_virtual_machine(
        self, id: str, timeout: int | UnsetType | None = UNSET, **kwargs: Any
    ) -> ShutdownVirtualMachine:
        from .shutdown_virtual_machine import ShutdownVirtualMachine

        query = gql("""
            mutation ShutdownVirtualMachine($id: ID!, $timeout: Int) {
              shutdownVirtualMachine(id: $id, timeout: $timeout) {
                virtualMachine {
                  ...VirtualMachineFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VirtualMachineFields on VirtualMachine {
              id
              name
              status
              zone
              host
              vdc
              cores
              memoryMb
              diskGb
              computeProfile
              storageProfile
              image
              lock
            }
            """)
        variables: dict[str, object] = {"id": id, "timeout": timeout}
        response = self.execute(
            query=query,
            operation_name="ShutdownVirtualMachine",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return ShutdownVirtualMachine.model_validate(data)

    def reboot_virtual_machine(self, id: str, **kwargs: Any) -> RebootVirtualMachine:
        from .reboot_virtual_machine import RebootVirtualMachine

        query = gql("""
            mutation RebootVirtualMachine($id: ID!) {
              rebootVirtualMachine(id: $id) {
                virtualMachine {
                  ...VirtualMachineFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VirtualMachineFields on VirtualMachine {
              id
              name
              status
              zone
              host
              vdc
              cores
              memoryMb
              diskGb
              computeProfile
              storageProfile
              image
              lock
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(
            query=query,
            operation_name="RebootVirtualMachine",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return RebootVirtualMachine.model_validate(data)

    def resize_virtual_machine(self, input: ResizeVirtualMachineInput, **kwargs: Any) -> ResizeVirtualMachine:
        from .resize_virtual_machine import ResizeVirtualMachine

        query = gql("""
            mutation ResizeVirtualMachine($input: ResizeVirtualMachineInput!) {
              resizeVirtualMachine(input: $input) {
                virtualMachine {
                  ...VirtualMachineFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VirtualMachineFields on VirtualMachine {
              id
              name
              status
              zone
              host
              vdc
              cores
              memoryMb
              diskGb
              computeProfile
              storageProfile
              image
              lock
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="ResizeVirtualMachine",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return ResizeVirtualMachine.model_validate(data)

    def delete_virtual_machine(self, id: str, **kwargs: Any) -> DeleteVirtualMachine:
        from .delete_virtual_machine import DeleteVirtualMachine

        query = gql("""
            mutation DeleteVirtualMachine($id: ID!) {
              deleteVirtualMachine(id: $id) {
                virtualMachine {
                  ...VirtualMachineFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  field
                  message
                  code
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VirtualMachineFields on VirtualMachine {
              id
              name
              status
              zone
              host
              vdc
              cores
              memoryMb
              diskGb
              computeProfile
              storageProfile
              image
              lock
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(
            query=query,
            operation_name="DeleteVirtualMachine",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return DeleteVirtualMachine.model_validate(data)

    def volumes(self, **kwargs: Any) -> Volumes:
        from .volumes import Volumes

        query = gql("""
            query Volumes {
              volumes {
                ...VolumeFields
              }
            }

            fragment VolumeFields on Volume {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              attachedTo
              serial
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(query=query, operation_name="Volumes", variables=variables, **kwargs)
        data = self.get_data(response)
        return Volumes.model_validate(data)

    def volume(self, id: str, **kwargs: Any) -> Volume:
        from .volume import Volume

        query = gql("""
            query Volume($id: ID!) {
              volume(id: $id) {
                ...VolumeFields
              }
            }

            fragment VolumeFields on Volume {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              attachedTo
              serial
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(query=query, operation_name="Volume", variables=variables, **kwargs)
        data = self.get_data(response)
        return Volume.model_validate(data)

    def create_volume(
        self,
        name: str,
        storage_profile: str,
        size_gb: int,
        zone: str | UnsetType | None = UNSET,
        near: str | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> CreateVolume:
        from .create_volume import CreateVolume

        query = gql("""
            mutation CreateVolume($name: String!, $storageProfile: String!, $sizeGb: Int!, $zone: String, $near: ID) {
              createVolume(
                name: $name
                storageProfile: $storageProfile
                sizeGb: $sizeGb
                zone: $zone
                near: $near
              ) {
                volume {
                  ...VolumeFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  ...VolumeErrorFields
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VolumeErrorFields on VolumeError {
              field
              message
              code
            }

            fragment VolumeFields on Volume {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              attachedTo
              serial
            }
            """)
        variables: dict[str, object] = {
            "name": name,
            "storageProfile": storage_profile,
            "sizeGb": size_gb,
            "zone": zone,
            "near": near,
        }
        response = self.execute(query=query, operation_name="CreateVolume", variables=variables, **kwargs)
        data = self.get_data(response)
        return CreateVolume.model_validate(data)

    def attach_volume(self, id: str, vm: str, **kwargs: Any) -> AttachVolume:
        from .attach_volume import AttachVolume

        query = gql("""
            mutation AttachVolume($id: ID!, $vm: ID!) {
              attachVolume(id: $id, vm: $vm) {
                volume {
                  ...VolumeFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  ...VolumeErrorFields
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VolumeErrorFields on VolumeError {
              field
              message
              code
            }

            fragment VolumeFields on Volume {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              attachedTo
              serial
            }
            """)
        variables: dict[str, object] = {"id": id, "vm": vm}
        response = self.execute(query=query, operation_name="AttachVolume", variables=variables, **kwargs)
        data = self.get_data(response)
        return AttachVolume.model_validate(data)

    def detach_volume(self, id: str, **kwargs: Any) -> DetachVolume:
        from .detach_volume import DetachVolume

        query = gql("""
            mutation DetachVolume($id: ID!) {
              detachVolume(id: $id) {
                volume {
                  ...VolumeFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  ...VolumeErrorFields
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VolumeErrorFields on VolumeError {
              field
              message
              code
            }

            fragment VolumeFields on Volume {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              attachedTo
              serial
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(query=query, operation_name="DetachVolume", variables=variables, **kwargs)
        data = self.get_data(response)
        return DetachVolume.model_validate(data)

    def resize_volume(self, id: str, size_gb: int, **kwargs: Any) -> ResizeVolume:
        from .resize_volume import ResizeVolume

        query = gql("""
            mutation ResizeVolume($id: ID!, $sizeGb: Int!) {
              resizeVolume(id: $id, sizeGb: $sizeGb) {
                volume {
                  ...VolumeFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  ...VolumeErrorFields
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VolumeErrorFields on VolumeError {
              field
              message
              code
            }

            fragment VolumeFields on Volume {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              attachedTo
              serial
            }
            """)
        variables: dict[str, object] = {"id": id, "sizeGb": size_gb}
        response = self.execute(query=query, operation_name="ResizeVolume", variables=variables, **kwargs)
        data = self.get_data(response)
        return ResizeVolume.model_validate(data)

    def delete_volume(self, id: str, **kwargs: Any) -> DeleteVolume:
        from .delete_volume import DeleteVolume

        query = gql("""
            mutation DeleteVolume($id: ID!) {
              deleteVolume(id: $id) {
                volume {
                  id
                }
                task {
                  ...TaskFields
                }
                errors {
                  ...VolumeErrorFields
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VolumeErrorFields on VolumeError {
              field
              message
              code
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(query=query, operation_name="DeleteVolume", variables=variables, **kwargs)
        data = self.get_data(response)
        return DeleteVolume.model_validate(data)

    def volume_storage_profiles(self, **kwargs: Any) -> VolumeStorageProfiles:
        from .volume_storage_profiles import VolumeStorageProfiles

        query = gql("""
            query VolumeStorageProfiles {
              storageProfiles {
                name
                minGb
                maxGb
              }
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(
            query=query,
            operation_name="VolumeStorageProfiles",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return VolumeStorageProfiles.model_validate(data)

    def volume_snapshots(self, volume: str | UnsetType | None = UNSET, **kwargs: Any) -> VolumeSnapshots:
        from .volume_snapshots import VolumeSnapshots

        query = gql("""
            query VolumeSnapshots($volume: ID) {
              volumeSnapshots(volume: $volume) {
                ...VolumeSnapshotFields
              }
            }

            fragment VolumeSnapshotFields on VolumeSnapshot {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              source
              sourceDeleted
              takenAt
            }
            """)
        variables: dict[str, object] = {"volume": volume}
        response = self.execute(query=query, operation_name="VolumeSnapshots", variables=variables, **kwargs)
        data = self.get_data(response)
        return VolumeSnapshots.model_validate(data)

    def volume_snapshot(self, id: str, **kwargs: Any) -> VolumeSnapshot:
        from .volume_snapshot import VolumeSnapshot

        query = gql("""
            query VolumeSnapshot($id: ID!) {
              volumeSnapshot(id: $id) {
                ...VolumeSnapshotFields
              }
            }

            fragment VolumeSnapshotFields on VolumeSnapshot {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              source
              sourceDeleted
              takenAt
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(query=query, operation_name="VolumeSnapshot", variables=variables, **kwargs)
        data = self.get_data(response)
        return VolumeSnapshot.model_validate(data)

    def create_volume_snapshot(self, volume: str, name: str, **kwargs: Any) -> CreateVolumeSnapshot:
        from .create_volume_snapshot import CreateVolumeSnapshot

        query = gql("""
            mutation CreateVolumeSnapshot($volume: ID!, $name: String!) {
              createVolumeSnapshot(volume: $volume, name: $name) {
                snapshot {
                  ...VolumeSnapshotFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  ...VolumeErrorFields
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VolumeErrorFields on VolumeError {
              field
              message
              code
            }

            fragment VolumeSnapshotFields on VolumeSnapshot {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              source
              sourceDeleted
              takenAt
            }
            """)
        variables: dict[str, object] = {"volume": volume, "name": name}
        response = self.execute(
            query=query,
            operation_name="CreateVolumeSnapshot",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CreateVolumeSnapshot.model_validate(data)

    def delete_volume_snapshot(self, id: str, **kwargs: Any) -> DeleteVolumeSnapshot:
        from .delete_volume_snapshot import DeleteVolumeSnapshot

        query = gql("""
            mutation DeleteVolumeSnapshot($id: ID!) {
              deleteVolumeSnapshot(id: $id) {
                snapshot {
                  id
                }
                task {
                  ...TaskFields
                }
                errors {
                  ...VolumeErrorFields
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VolumeErrorFields on VolumeError {
              field
              message
              code
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(
            query=query,
            operation_name="DeleteVolumeSnapshot",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return DeleteVolumeSnapshot.model_validate(data)

    def create_volume_from_snapshot(
        self,
        snapshot: str,
        name: str,
        size_gb: int | UnsetType | None = UNSET,
        **kwargs: Any,
    ) -> CreateVolumeFromSnapshot:
        from .create_volume_from_snapshot import CreateVolumeFromSnapshot

        query = gql("""
            mutation CreateVolumeFromSnapshot($snapshot: ID!, $name: String!, $sizeGb: Int) {
              createVolumeFromSnapshot(snapshot: $snapshot, name: $name, sizeGb: $sizeGb) {
                volume {
                  ...VolumeFields
                }
                task {
                  ...TaskFields
                }
                errors {
                  ...VolumeErrorFields
                }
              }
            }

            fragment TaskFields on Task {
              id
              zone
              host
              type
              title
              virtualMachineId
              status
              progress
              result
              startedAt
              endedAt
            }

            fragment VolumeErrorFields on VolumeError {
              field
              message
              code
            }

            fragment VolumeFields on Volume {
              id
              name
              vdc
              zone
              host
              storageProfile
              sizeGb
              status
              attachedTo
              serial
            }
            """)
        variables: dict[str, object] = {
            "snapshot": snapshot,
            "name": name,
            "sizeGb": size_gb,
        }
        response = self.execute(
            query=query,
            operation_name="CreateVolumeFromSnapshot",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CreateVolumeFromSnapshot.model_validate(data)
