{{/*
Helpers of the identity chart, all namespaced "identity." so that a parent chart's never collide.
*/}}

{{- define "identity.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The resource name prefix: fullnameOverride, else "<release>-<chart>" (just "<release>" when it contains the chart name). */}}
{{- define "identity.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 53 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels of every resource; (list . "component"). */}}
{{- define "identity.labels" -}}
{{- $root := index . 0 -}}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "identity.selectorLabels" . }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: flexplane
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
{{- with $root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The labels that select a component's pods (immutable); (list . "component"). */}}
{{- define "identity.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "identity.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* The label of the pods the database accepts (Zitadel, its init and setup jobs), and nothing else. */}}
{{- define "identity.databaseClientLabel" -}}
identity.flexplane.io/database-client: {{ include "identity.fullname" . | quote }}
{{- end }}

{{/*
A repository under global.imageRegistry, when that is set: the repository's registry (its first segment
when that has a "." or a ":" or is "localhost", as container runtimes read it; else Docker Hub's) is
replaced and the path kept, so a mirror copied with the same paths serves every image. Called with
(dict "repository" ... "root" $).
*/}}
{{- define "identity.repository" -}}
{{- $registry := trimSuffix "/" ((.root.Values.global | default (dict)).imageRegistry | default "") }}
{{- $repository := .repository }}
{{- if $registry }}
{{- $parts := splitList "/" $repository }}
{{- $first := first $parts }}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) }}
{{- $repository = join "/" (rest $parts) }}
{{- end }}
{{- $repository = printf "%s/%s" $registry $repository }}
{{- end }}
{{- $repository }}
{{- end }}

{{/*
An image reference, repository:tag[@digest], from an image's values (repository, tag, digest), the tag
defaulting to "defaultTag". Called with (dict "image" .Values.x.image "defaultTag" ... "root" $).
*/}}
{{- define "identity.imageOf" -}}
{{- $repository := include "identity.repository" (dict "repository" .image.repository "root" .root) }}
{{- $reference := printf "%s:%s" $repository (.image.tag | default .defaultTag) }}
{{- if .image.digest }}
{{- $reference = printf "%s@%s" $reference .image.digest }}
{{- end }}
{{- $reference }}
{{- end }}

{{/* Zitadel's image: the tag defaults to the chart's appVersion (Zitadel's release). */}}
{{- define "identity.zitadelImage" -}}
{{- include "identity.imageOf" (dict "image" .Values.zitadel.image "defaultTag" .Chart.AppVersion "root" .) }}
{{- end }}

{{/* PostgreSQL's image (its tag is required: a major version). */}}
{{- define "identity.postgresqlImage" -}}
{{- $image := .Values.database.postgresql.image }}
{{- $_ := required "database.postgresql.image.tag is required (a major version, e.g. \"17\")" $image.tag }}
{{- include "identity.imageOf" (dict "image" $image "defaultTag" "" "root" .) }}
{{- end }}

{{- define "identity.masterkeySecretName" -}}
{{- .Values.masterkey.existingSecret | default (printf "%s-masterkey" (include "identity.fullname" .)) }}
{{- end }}

{{- define "identity.adminSecretName" -}}
{{- .Values.firstInstance.admin.existingSecret }}
{{- end }}

{{- define "identity.postgresqlName" -}}
{{- printf "%s-postgresql" (include "identity.fullname" .) }}
{{- end }}

{{- define "identity.databaseUserSecretName" -}}
{{- .Values.database.user.existingSecret }}
{{- end }}

{{- define "identity.databaseAdminSecretName" -}}
{{- .Values.database.admin.existingSecret }}
{{- end }}

{{- define "identity.databaseHost" -}}
{{- if .Values.database.external.enabled }}
{{- .Values.database.external.host }}
{{- else }}
{{- printf "%s.%s.svc" (include "identity.postgresqlName" .) .Release.Namespace }}
{{- end }}
{{- end }}

{{- define "identity.tlsSecretName" -}}
{{- .Values.tls.secretName | default (printf "%s-tls" (include "identity.fullname" .)) }}
{{- end }}

{{/* Zitadel's --tlsMode: external (an ingress terminates TLS), enabled (Zitadel does) or disabled. */}}
{{- define "identity.tlsMode" -}}
{{- get (dict "ingress" "external" "zitadel" "enabled" "none" "disabled") .Values.tls.mode }}
{{- end }}

{{- define "identity.serviceUserNamespace" -}}
{{- .Values.serviceUser.secret.namespace | default .Release.Namespace }}
{{- end }}

{{- define "identity.portalNamespace" -}}
{{- .Values.portal.secret.namespace | default (include "identity.serviceUserNamespace" .) }}
{{- end }}

{{- define "identity.issuer" -}}
{{- $scheme := ternary "https" "http" .Values.external.secure }}
{{- $port := int .Values.external.port }}
{{- if or (and .Values.external.secure (eq $port 443)) (and (not .Values.external.secure) (eq $port 80)) }}
{{- printf "%s://%s" $scheme .Values.external.domain }}
{{- else }}
{{- printf "%s://%s:%d" $scheme .Values.external.domain $port }}
{{- end }}
{{- end }}

{{/* What the values cannot say in the schema alone. */}}
{{- define "identity.validate" -}}
{{- if not .Values.external.domain }}
{{- fail "external.domain: name the host users reach Zitadel at (e.g. id.example.com)" }}
{{- end }}
{{- if and (eq .Values.tls.mode "none") .Values.external.secure }}
{{- fail "tls.mode none serves plain HTTP: set external.secure false (a trial only), or choose ingress or zitadel" }}
{{- end }}
{{- if and (ne .Values.tls.mode "none") (not .Values.external.secure) }}
{{- fail "external.secure false with TLS: Zitadel would name an http:// issuer behind HTTPS" }}
{{- end }}
{{- if and .Values.masterkey.existingSecret .Values.masterkey.value }}
{{- fail "masterkey: give existingSecret or value, not both" }}
{{- end }}
{{- /* Generated once, by the operator: a render never makes a secret (a GitOps tool renders without a
cluster, and a new masterkey or password on each sync bricks Zitadel or its database). */}}
{{- $make := `kubectl -n <namespace> create secret generic identity-secrets --from-literal=masterkey="$(openssl rand -hex 16)" --from-literal=admin-password="$(openssl rand -hex 12)-Aa1" --from-literal=postgres-password="$(openssl rand -hex 24)" --from-literal=zitadel-password="$(openssl rand -hex 24)"` }}
{{- if not (or .Values.masterkey.existingSecret .Values.masterkey.value) }}
{{- fail (printf "masterkey.existingSecret: name the Secret holding Zitadel's masterkey, made once (the chart generates none): %s" $make) }}
{{- end }}
{{- if not .Values.firstInstance.admin.existingSecret }}
{{- fail (printf "firstInstance.admin.existingSecret: name the Secret holding the first admin's first password, made once (the chart generates none): %s" $make) }}
{{- end }}
{{- if .Values.database.external.enabled }}
{{- if not .Values.database.external.host }}
{{- fail "database.external.host: name the external PostgreSQL's host" }}
{{- end }}

{{- if and (has .Values.database.external.sslMode (list "verify-ca" "verify-full")) (not .Values.database.external.caSecret) }}
{{- fail "database.external.caSecret: sslMode verify-ca and verify-full need the server's CA (a Secret with ca.crt)" }}
{{- end }}
{{- end }}
{{- if not .Values.database.user.existingSecret }}
{{- fail (printf "database.user.existingSecret: name the Secret holding Zitadel's database password, made once (the chart generates none): %s" $make) }}
{{- end }}
{{- if not .Values.database.admin.existingSecret }}
{{- fail (printf "database.admin.existingSecret: name the Secret holding the database admin's password (zitadel init; the in-chart PostgreSQL's superuser), made once (the chart generates none): %s" $make) }}
{{- end }}
{{- if and .Values.portal.enabled (not .Values.portal.url) }}
{{- fail "portal.url: name the portal's public URL (https://cloud.example.com), or set portal.enabled false" }}
{{- end }}
{{- end }}

{{/* The Secret holding the CA of the database's certificate (key ca.crt), or "" for none. */}}
{{- define "identity.databaseCASecret" -}}
{{- if .Values.database.external.enabled }}
{{- .Values.database.external.caSecret }}
{{- else }}
{{- .Values.database.postgresql.tls.secretName }}
{{- end }}
{{- end }}

{{/* How clients reach the database: the external one's sslMode; verify-full for the in-chart one with
a certificate, plain inside its fence without. Zitadel and the backup's pg_dump alike. */}}
{{- define "identity.databaseSSLMode" -}}
{{- if .Values.database.external.enabled }}
{{- .Values.database.external.sslMode }}
{{- else if .Values.database.postgresql.tls.secretName }}
{{- "verify-full" }}
{{- else }}
{{- "disable" }}
{{- end }}
{{- end }}

{{/* The database's port. */}}
{{- define "identity.databasePort" -}}
{{- ternary .Values.database.external.port 5432 .Values.database.external.enabled | int }}
{{- end }}

{{/* Zitadel's runtime configuration (no secret in it: those come as environment variables). */}}
{{- define "identity.zitadelConfig" -}}
{{- $ssl := dict "Mode" (include "identity.databaseSSLMode" .) }}
{{- if include "identity.databaseCASecret" . }}
{{- $_ := set $ssl "RootCert" "/etc/zitadel/database-ca/ca.crt" }}
{{- end }}
{{- $config := dict
  "Log" (dict "Level" .Values.zitadel.logLevel "Formatter" (dict "Format" "json"))
  "Port" (int .Values.zitadel.port)
  "ExternalDomain" .Values.external.domain
  "ExternalPort" (int .Values.external.port)
  "ExternalSecure" .Values.external.secure
  "TLS" (dict "Enabled" (eq .Values.tls.mode "zitadel") "KeyPath" "/etc/zitadel/tls/tls.key" "CertPath" "/etc/zitadel/tls/tls.crt")
  "Database" (dict "postgres" (dict
    "Host" (include "identity.databaseHost" .)
    "Port" (int (include "identity.databasePort" .))
    "Database" .Values.database.name
    "MaxOpenConns" 20
    "MaxIdleConns" 10
    "User" (dict "Username" .Values.database.user.username "SSL" $ssl)
    "Admin" (dict "Username" .Values.database.admin.username "SSL" $ssl)))
  "Machine" (dict "Identification" (dict "Hostname" (dict "Enabled" true) "Webhook" (dict "Enabled" false)))
}}
{{- toYaml (mergeOverwrite $config (deepCopy .Values.zitadel.extraConfig)) }}
{{- end }}

{{/* The steps of `zitadel setup`: the first instance, its admin and the orchestrator's service user. */}}
{{- define "identity.steps" -}}
{{- $admin := .Values.firstInstance.admin }}
{{- $steps := dict "FirstInstance" (dict
  "InstanceName" .Values.firstInstance.name
  "DefaultLanguage" "en"
  "MachineKeyPath" "/machinekey/key.json"
  "Org" (dict
    "Name" .Values.firstInstance.organization
    "Human" (dict
      "UserName" $admin.username
      "FirstName" $admin.firstName
      "LastName" $admin.lastName
      "Email" (dict "Address" ($admin.email | default (printf "admin@%s" .Values.external.domain)) "Verified" true)
      "PasswordChangeRequired" $admin.passwordChangeRequired)
    "Machine" (dict
      "Machine" (dict "Username" .Values.serviceUser.username "Name" .Values.serviceUser.name)
      "MachineKey" (dict "ExpirationDate" .Values.serviceUser.keyExpiration "Type" 1)))) }}
{{- toYaml $steps }}
{{- end }}

{{/* The masterkey, for Zitadel and its setup (init needs none). */}}
{{- define "identity.masterkeyEnv" -}}
- name: ZITADEL_MASTERKEY
  valueFrom:
    secretKeyRef:
      name: {{ include "identity.masterkeySecretName" . }}
      key: {{ .Values.masterkey.key | quote }}
{{- end }}

{{/* The environment of Zitadel's processes: the database user's password from its Secret, and extraEnv. */}}
{{- define "identity.zitadelEnv" -}}
- name: ZITADEL_DATABASE_POSTGRES_USER_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "identity.databaseUserSecretName" . }}
      key: {{ .Values.database.user.key | quote }}
{{- with .Values.zitadel.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The security context of every container of the chart. */}}
{{- define "identity.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
privileged: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The volumes and mounts Zitadel's processes share: the configuration, TLS, the database's CA. */}}
{{- define "identity.zitadelMounts" -}}
- name: config
  mountPath: /etc/zitadel/config
  readOnly: true
{{- if eq .Values.tls.mode "zitadel" }}
- name: tls
  mountPath: /etc/zitadel/tls
  readOnly: true
{{- end }}
{{- if include "identity.databaseCASecret" . }}
- name: database-ca
  mountPath: /etc/zitadel/database-ca
  readOnly: true
{{- end }}
{{- end }}

{{/* (list . "<ConfigMap name>") */}}
{{- define "identity.zitadelVolumes" -}}
{{- $root := index . 0 -}}
- name: config
  configMap:
    name: {{ index . 1 }}
{{- if eq $root.Values.tls.mode "zitadel" }}
- name: tls
  secret:
    secretName: {{ include "identity.tlsSecretName" $root }}
    defaultMode: 0440
{{- end }}
{{- with include "identity.databaseCASecret" $root }}
- name: database-ca
  secret:
    secretName: {{ . }}
    defaultMode: 0444
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- end }}

{{/* What the handover and bootstrap steps are told (files/zitadel_bootstrap.py), as JSON: no secret in it. */}}
{{- define "identity.bootstrapSettings" -}}
{{- $fullname := include "identity.fullname" . }}
{{- $api := .Values.bootstrap.apiURL }}
{{- $host := "" }}
{{- if not $api }}
{{- if eq .Values.tls.mode "zitadel" }}
{{- $api = include "identity.issuer" . }}
{{- else }}
{{- $api = printf "http://%s.%s.svc:%d" $fullname .Release.Namespace (int .Values.service.port) }}
{{- $host = ternary .Values.external.domain (printf "%s:%d" .Values.external.domain (int .Values.external.port)) (has (int .Values.external.port) (list 80 443)) }}
{{- end }}
{{- end }}
{{- $settings := dict
  "apiURL" $api
  "host" $host
  "issuer" (include "identity.issuer" .)
  "keyFile" "/machinekey/key.json"
  "serviceUserNamespace" (include "identity.serviceUserNamespace" .)
  "serviceUserSecret" .Values.serviceUser.secret.name
  "keyKey" .Values.serviceUser.secret.key
  "project" .Values.project.name
  "roles" .Values.project.roles
  "admin" .Values.firstInstance.admin.username
  "adminRoles" .Values.project.adminRoles
  "timeoutSeconds" .Values.bootstrap.timeoutSeconds
}}
{{- if .Values.portal.enabled }}
{{- $_ := set $settings "portal" (dict "url" .Values.portal.url "namespace" (include "identity.portalNamespace" .) "secret" .Values.portal.secret.name) }}
{{- end }}
{{- toJson $settings }}
{{- end }}

{{/*
The bootstrap job's image, the orchestrator's: the tag defaults to the chart's version, which is the
project's (the chart's appVersion is Zitadel's release).
*/}}
{{- define "identity.bootstrapImage" -}}
{{- include "identity.imageOf" (dict "image" .Values.bootstrap.image "defaultTag" .Chart.Version "root" .) }}
{{- end }}

{{/* The pod-level security context of the jobs (Zitadel's user: the handover reads the key it wrote). */}}
{{- define "identity.jobPodSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The ServiceAccount token, mounted into the handover and bootstrap containers only. */}}
{{- define "identity.apiTokenMount" -}}
- name: api-token
  mountPath: /var/run/secrets/kubernetes.io/serviceaccount
  readOnly: true
{{- end }}

{{- define "identity.apiTokenVolume" -}}
- name: api-token
  projected:
    defaultMode: 0444
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 3600
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
{{- end }}
