{{/*
What every process of the orchestrator's image run by this chart shares: its settings (FLEXPLANE_*),
the files they name (the agents' client certificate, Zitadel's service user, the release channel) and
its scratch space. The orchestrator's Deployment and the gateway reconciler's include them alike, so
both run with the same configuration.
*/}}
{{- define "flexplane.orchestratorEnv" -}}
- name: DJANGO_SETTINGS_MODULE
  value: flexplane.settings.production
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
- name: PYTHONUNBUFFERED
  value: "1"
- name: FLEXPLANE_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "flexplane.secretKeySecretName" . }}
      key: {{ .Values.secretKey.key | quote }}
- name: FLEXPLANE_ALLOWED_HOSTS
  value: {{ include "flexplane.allowedHosts" . | fromJsonArray | join "," | quote }}
- name: FLEXPLANE_CSRF_TRUSTED_ORIGINS
  value: {{ .Values.config.csrfTrustedOrigins | join "," | quote }}
- name: FLEXPLANE_SSL_REDIRECT
  value: {{ .Values.config.sslRedirect | quote }}
- name: FLEXPLANE_LOG_LEVEL
  value: {{ .Values.config.logLevel | quote }}
- name: FLEXPLANE_LOG_FORMAT
  value: {{ .Values.config.logFormat | quote }}
- name: FLEXPLANE_NAMESPACE
  value: {{ include "flexplane.platformNamespace" . | quote }}
{{- if and .Values.rbac.create .Values.rbac.tenantClusters }}
- name: FLEXPLANE_VDC_ROLE
  value: {{ printf "%s-vdc" (include "flexplane.fullname" .) | quote }}
- name: FLEXPLANE_SERVICE_ACCOUNT
  value: {{ printf "%s/%s" .Release.Namespace (include "flexplane.serviceAccountName" .) | quote }}
{{- end }}
- name: FLEXPLANE_KUBE_TIMEOUT
  value: {{ .Values.config.kube.timeout | quote }}
- name: FLEXPLANE_OIDC_ISSUER
  value: {{ .Values.config.oidc.issuer | quote }}
- name: FLEXPLANE_OIDC_AUDIENCE
  value: {{ .Values.config.oidc.audience | quote }}
{{- with .Values.config.oidc.projectId }}
- name: FLEXPLANE_OIDC_PROJECT_ID
  value: {{ . | quote }}
{{- end }}
- name: FLEXPLANE_OIDC_ALGORITHMS
  value: {{ .Values.config.oidc.algorithms | join "," | quote }}
- name: FLEXPLANE_OIDC_TIMEOUT
  value: {{ .Values.config.oidc.timeout | quote }}
- name: FLEXPLANE_JWKS_TTL
  value: {{ .Values.config.oidc.jwksTTL | quote }}
- name: FLEXPLANE_OIDC_LEEWAY
  value: {{ .Values.config.oidc.leeway | quote }}
- name: FLEXPLANE_OIDC_ACCESS_TOKEN_TYPE
  value: {{ .Values.config.oidc.accessTokenType | quote }}
{{- with .Values.config.zitadel }}
{{- if .url }}
- name: FLEXPLANE_ZITADEL_URL
  value: {{ .url | quote }}
{{- end }}
{{- if .audience }}
- name: FLEXPLANE_ZITADEL_AUDIENCE
  value: {{ .audience | quote }}
{{- end }}
- name: FLEXPLANE_ZITADEL_TIMEOUT
  value: {{ .timeout | quote }}
{{- end }}
{{- if .Values.zitadelServiceUser.secretName }}
- name: FLEXPLANE_ZITADEL_KEY_FILE
  value: {{ printf "%s/%s" .Values.zitadelServiceUser.mountPath .Values.zitadelServiceUser.key | quote }}
{{- end }}
{{- with .Values.config.portal }}
- name: FLEXPLANE_OIDC_CLIENT_ID
  value: {{ .clientId | quote }}
{{- if .clientSecret.secretName }}
- name: FLEXPLANE_OIDC_CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .clientSecret.secretName }}
      key: {{ .clientSecret.key | quote }}
{{- end }}
- name: FLEXPLANE_OIDC_SIGN_ALGO
  value: {{ .signAlgorithm | quote }}
{{- if .scopes }}
- name: FLEXPLANE_OIDC_SCOPES
  value: {{ .scopes | quote }}
{{- end }}
- name: FLEXPLANE_OIDC_RENEW_SECONDS
  value: {{ .renewSeconds | int64 | quote }}
- name: FLEXPLANE_ADMIN_RENEW_SECONDS
  value: {{ .adminRenewSeconds | int64 | quote }}
- name: FLEXPLANE_SESSION_AGE
  value: {{ .sessionAge | int64 | quote }}
- name: FLEXPLANE_CSP_EXEMPT
  value: {{ .cspExempt | join "," | quote }}
{{- end }}
- name: FLEXPLANE_AGENT_CA
  value: {{ printf "%s/%s" .Values.agentTLS.mountPath .Values.agentTLS.caKey | quote }}
- name: FLEXPLANE_AGENT_CERT
  value: {{ printf "%s/%s" .Values.agentTLS.mountPath .Values.agentTLS.certKey | quote }}
- name: FLEXPLANE_AGENT_KEY
  value: {{ printf "%s/%s" .Values.agentTLS.mountPath .Values.agentTLS.keyKey | quote }}
- name: FLEXPLANE_AGENT_TIMEOUT
  value: {{ .Values.config.agent.timeout | quote }}
- name: FLEXPLANE_ZONE_DEADLINE
  value: {{ .Values.config.agent.zoneDeadline | quote }}
- name: FLEXPLANE_AGENT_MAX_IN_FLIGHT
  value: {{ .Values.config.agent.maxInFlight | quote }}
# Enrollment and renewal: the platform CA signs, nodes reach the orchestrator at the URL.
- name: FLEXPLANE_AGENT_CA_SECRET
  value: {{ .Values.agentCA.secretName | quote }}
{{- with .Values.config.enrollment }}
- name: FLEXPLANE_ENROLLMENT_URL
  value: {{ include "flexplane.enrollmentURL" $ | quote }}
- name: FLEXPLANE_JOIN_TOKEN_TTL
  value: {{ .joinTokenTTL | int64 | quote }}
- name: FLEXPLANE_AGENT_CERT_LIFETIME
  value: {{ .certificateLifetime | int64 | quote }}
- name: FLEXPLANE_RENEWAL_MAX_SKEW
  value: {{ .renewalMaxSkew | quote }}
- name: FLEXPLANE_AGENT_ALLOWED_CLIENTS
  value: {{ .allowedClients | join "," | quote }}
{{- end }}
# The WireGuard mesh (templates/*mesh*): "" when off, nodes then enroll at their own address.
{{- include "flexplane.meshEnv" . | nindent 0 }}
{{- if .Values.agentReleases.enabled }}
# The release channel: nodes install from it at enrollment and update from it.
- name: FLEXPLANE_AGENT_RELEASES_DIR
  value: {{ .Values.agentReleases.mountPath | quote }}
- name: FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY
  value: {{ .Values.agentReleases.publicKey | quote }}
{{- with .Values.agentReleases.registry }}
{{- if .repository }}
# Releases from an OCI registry: the folder above is then not read.
- name: FLEXPLANE_AGENT_REGISTRY
  value: {{ .repository | quote }}
{{- if .credentialsSecret }}
- name: FLEXPLANE_AGENT_REGISTRY_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .credentialsSecret }}
      key: {{ .usernameKey | quote }}
- name: FLEXPLANE_AGENT_REGISTRY_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .credentialsSecret }}
      key: {{ .passwordKey | quote }}
{{- end }}
{{- if .caSecret }}
- name: FLEXPLANE_AGENT_REGISTRY_CA
  value: {{ printf "%s/%s" .mountPath .caKey | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
- name: FLEXPLANE_IMAGE_ALLOW_HOSTS
  value: {{ .Values.config.imageAllowHosts | join "," | quote }}
- name: FLEXPLANE_CONTROL_PLANE_ADDRESSES
  value: {{ .Values.config.controlPlaneAddresses | join "," | quote }}
- name: FLEXPLANE_CONTROL_PLANE_SHARED_PORT
  value: {{ .Values.config.controlPlaneSharedPort | toString | quote }}
- name: FLEXPLANE_GRAPHQL_INTROSPECTION
  value: {{ .Values.config.graphql.introspection | quote }}
- name: FLEXPLANE_GRAPHQL_MAX_DEPTH
  value: {{ .Values.config.graphql.maxDepth | quote }}
- name: FLEXPLANE_GRAPHQL_MAX_ALIASES
  value: {{ .Values.config.graphql.maxAliases | quote }}
- name: FLEXPLANE_GRAPHQL_MAX_TOKENS
  value: {{ .Values.config.graphql.maxTokens | quote }}
- name: FLEXPLANE_REQUEST_THREADS
  value: {{ .Values.server.requestThreads | quote }}
- name: FLEXPLANE_MAX_CONCURRENT_QUERIES
  value: {{ .Values.config.graphql.maxConcurrentQueries | quote }}
- name: FLEXPLANE_QUERY_QUEUE_TIMEOUT
  value: {{ .Values.config.graphql.queueTimeout | quote }}
- name: FLEXPLANE_PAGE_SIZE_MAX
  value: {{ .Values.config.graphql.pageSizeMax | quote }}
{{- with .Values.config.console }}
- name: FLEXPLANE_CONSOLE_MAX_PER_VM
  value: {{ .maxPerVM | quote }}
- name: FLEXPLANE_CONSOLE_MAX_PER_USER
  value: {{ .maxPerUser | quote }}
- name: FLEXPLANE_CONSOLE_IDLE_TIMEOUT
  value: {{ .idleTimeout | quote }}
- name: FLEXPLANE_CONSOLE_TICKET_TTL
  value: {{ .ticketTTL | quote }}
{{- end }}
# 0: no metrics port, and so no /metrics anywhere.
- name: FLEXPLANE_METRICS_PORT
  value: {{ ternary .Values.metrics.port 0 .Values.metrics.enabled | quote }}
{{- with .Values.extraEnv }}
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end }}

{{- define "flexplane.orchestratorMounts" -}}
- name: agent-tls
  mountPath: {{ .Values.agentTLS.mountPath }}
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- if .Values.zitadelServiceUser.secretName }}
- name: zitadel-service-user
  mountPath: {{ .Values.zitadelServiceUser.mountPath }}
  readOnly: true
{{- end }}
{{- if .Values.agentReleases.enabled }}
- name: agent-releases
  mountPath: {{ .Values.agentReleases.mountPath }}
  readOnly: true
{{- if and .Values.agentReleases.registry.repository .Values.agentReleases.registry.caSecret }}
- name: agent-registry-ca
  mountPath: {{ .Values.agentReleases.registry.mountPath }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{- define "flexplane.orchestratorVolumes" -}}
- name: agent-tls
  secret:
    secretName: {{ include "flexplane.agentTLSSecretName" . }}
    defaultMode: 0440
    items:
      - key: {{ .Values.agentTLS.caKey | quote }}
        path: {{ .Values.agentTLS.caKey | quote }}
      - key: {{ .Values.agentTLS.certKey | quote }}
        path: {{ .Values.agentTLS.certKey | quote }}
      - key: {{ .Values.agentTLS.keyKey | quote }}
        path: {{ .Values.agentTLS.keyKey | quote }}
{{- if .Values.zitadelServiceUser.secretName }}
# The identity chart's handover (its serviceUser.secret).
- name: zitadel-service-user
  secret:
    secretName: {{ .Values.zitadelServiceUser.secretName }}
    defaultMode: 0440
    items:
      - key: {{ .Values.zitadelServiceUser.key | quote }}
        path: {{ .Values.zitadelServiceUser.key | quote }}
{{- end }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmp.sizeLimit }}
    {{- with .Values.tmp.medium }}
    medium: {{ . }}
    {{- end }}
{{- if .Values.agentReleases.enabled }}
# Read on every request: a changed ConfigMap reaches the channel without a restart.
- name: agent-releases
  configMap:
    name: {{ include "flexplane.agentReleasesConfigMapName" . }}
    defaultMode: 0444
    # Until it exists, the channel publishes no release (and the pods start all the same).
    optional: true
{{- with .Values.agentReleases.registry }}
{{- if and .repository .caSecret }}
- name: agent-registry-ca
  secret:
    secretName: {{ .caSecret }}
    defaultMode: 0444
    items:
      - key: {{ .caKey | quote }}
        path: {{ .caKey | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{/* The gateway reconciler's labels (deployment_gateways.yaml). */}}
{{- define "flexplane.gatewaysSelectorLabels" -}}
app.kubernetes.io/name: {{ include "flexplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateways
{{- end }}

{{- define "flexplane.gatewaysLabels" -}}
helm.sh/chart: {{ include "flexplane.chart" . }}
{{ include "flexplane.gatewaysSelectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: flexplane
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}
