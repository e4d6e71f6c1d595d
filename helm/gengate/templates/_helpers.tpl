{{/*
The chart name, or nameOverride. Kubernetes names are at most 63 characters (DNS labels).
*/}}
{{- define "gengate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's resources: fullnameOverride, else <release>-<name>, or the release name
alone when it already contains the chart name (a release called "gengate" gives "gengate", not
"gengate-gengate").
*/}}
{{- define "gengate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The full name with a suffix ("metrics", "redis", "dashboard-overview"...), as a name of another object of
the release: the full name is shortened first so that the suffix always survives, which keeps every name
within 63 characters and distinct from the others, whatever the release name or fullnameOverride.
Call it with (list $ "suffix").
*/}}
{{- define "gengate.suffixedName" -}}
{{- $root := index . 0 }}
{{- $suffix := index . 1 }}
{{- $fullname := include "gengate.fullname" $root | trunc (int (sub 62 (len $suffix))) | trimSuffix "-" }}
{{- printf "%s-%s" $fullname $suffix }}
{{- end }}

{{/*
Chart name and version, as the helm.sh/chart label wants them.
*/}}
{{- define "gengate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every resource.
*/}}
{{- define "gengate.labels" -}}
helm.sh/chart: {{ include "gengate.chart" . }}
{{ include "gengate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gengate
{{- end }}

{{/*
Labels that select the release's pods: never change them in an upgrade (a Deployment's selector is
immutable).
*/}}
{{- define "gengate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gengate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels of the helm test pod: the release's, but never both selector labels, so that neither Service
sends it traffic nor a policy of the gateway's pods applies to it.
*/}}
{{- define "gengate.testSelectorLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
{{- end }}

{{- define "gengate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gengate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference: repository, then the digest when given, else the tag (default: appVersion).
*/}}
{{- define "gengate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The most replicas that can run at once: what a Redis outage in fail-open mode divides limits by.
*/}}
{{- define "gengate.maxReplicas" -}}
{{- if .Values.autoscaling.enabled }}{{ .Values.autoscaling.maxReplicas }}{{ else }}{{ .Values.replicaCount }}{{ end }}
{{- end }}

{{/*
The fewest replicas that run outside a disruption: a PodDisruptionBudget only makes sense above one.
*/}}
{{- define "gengate.minReplicas" -}}
{{- if .Values.autoscaling.enabled }}{{ .Values.autoscaling.minReplicas }}{{ else }}{{ .Values.replicaCount }}{{ end }}
{{- end }}

{{/*
The Secret holding the upstream tokens (the chart's or existingSecret), or nothing when there is none.
*/}}
{{- define "gengate.upstreamSecretName" -}}
{{- if .Values.upstreamCredentials.existingSecret }}
{{- .Values.upstreamCredentials.existingSecret }}
{{- else if .Values.upstreamCredentials.tokens }}
{{- include "gengate.suffixedName" (list . "upstream") }}
{{- end }}
{{- end }}

{{/*
The Secret and key holding the Redis URL (the chart's or existingSecret), or nothing when there is none.
*/}}
{{- define "gengate.redisSecretName" -}}
{{- if .Values.redis.existingSecret }}
{{- .Values.redis.existingSecret }}
{{- else if .Values.redis.url }}
{{- include "gengate.suffixedName" (list . "redis") }}
{{- end }}
{{- end }}

{{/*
Where the Redis password and CA certificates are mounted, from redis.passwordSecret and redis.tls.caSecret.
*/}}
{{- define "gengate.redisCredentialsPath" -}}/var/run/secrets/gengate/redis{{- end }}

{{/*
What config.store.redis gets of redis.passwordSecret, redis.username and redis.tls: the files gengate reads
(the values stay in their Secrets), and TLS when asked for or when a CA is given.
*/}}
{{- define "gengate.redisSecurityConfig" -}}
{{- with .Values.redis.username }}
username: {{ . | quote }}
{{- end }}
{{- if .Values.redis.passwordSecret }}
passwordFile: {{ include "gengate.redisCredentialsPath" . }}/password
{{- end }}
{{- $tls := .Values.redis.tls }}
{{- if or $tls.enabled $tls.caSecret }}
tls:
  {{- if $tls.caSecret }}
  caFile: {{ include "gengate.redisCredentialsPath" . }}/ca.crt
  {{- end }}
  {{- with $tls.serverName }}
  serverName: {{ . | quote }}
  {{- end }}
{{- end }}
{{- end }}

{{- define "gengate.redisSecretKey" -}}
{{- if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretKey }}{{ else }}redis-url{{ end }}
{{- end }}

{{/*
The gengate configuration file: config from the values, with store.replicas defaulting to the most
replicas that can run. Refuses, at render time, what would deploy a gateway that cannot work: several
replicas on a memory store, or a Redis store with no address.
*/}}
{{- define "gengate.config" -}}
{{- $config := deepCopy .Values.config }}
{{- $store := $config.store | default dict }}
{{- $maxReplicas := include "gengate.maxReplicas" . | int }}
{{- if and (eq ($store.kind | default "redis") "memory") (gt $maxReplicas 1) }}
{{- fail "config.store.kind memory keeps limits and request ownership in each replica: run one replica (replicaCount: 1, autoscaling.enabled: false) or use kind redis" }}
{{- end }}
{{- if eq ($store.kind | default "redis") "redis" }}
{{- $redis := $store.redis | default dict }}
{{- if not (or .Values.redis.url .Values.redis.existingSecret $redis.url $redis.nodes) }}
{{- fail "config.store.kind redis needs a Redis: set redis.url, redis.existingSecret, or config.store.redis.nodes for a Redis Cluster (docs/deploy.md, \"Redis\")" }}
{{- end }}
{{- if regexMatch "^rediss?://[^/@]*:[^/@]*@" ($redis.url | default "") }}
{{- fail "config.store.redis.url carries a password, which the ConfigMap would hold in plain text: put the URL in a Secret and name it with redis.existingSecret (or give it as redis.url, which the chart keeps in a Secret), or name a Secret holding the password alone with redis.passwordSecret (docs/deploy.md, \"Redis\")" }}
{{- end }}
{{- $_ := set $store "redis" (merge $redis (include "gengate.redisSecurityConfig" . | fromYaml)) }}
{{- end }}
{{- if not (hasKey $store "replicas") }}
{{- $_ := set $store "replicas" (max $maxReplicas 1) }}
{{- end }}
{{- $_ := set $config "store" $store }}
{{- toYaml $config }}
{{- end }}

{{/*
Whether the platform assigns the pods' uid, gid and fsGroup (OpenShift's restricted SCCs refuse fixed
ones): openshift.adaptSecurityContext force, or auto on a cluster that serves security.openshift.io/v1.
*/}}
{{- define "gengate.platformAssignsIds" -}}
{{- $mode := .Values.openshift.adaptSecurityContext }}
{{- if or (eq $mode "force") (and (eq $mode "auto") (.Capabilities.APIVersions.Has "security.openshift.io/v1")) }}true{{ end }}
{{- end }}

{{/*
The pods' and the containers' security contexts from the values, without the fixed ids where the platform
assigns them.
*/}}
{{- define "gengate.podSecurityContext" -}}
{{- if include "gengate.platformAssignsIds" . }}
{{- toYaml (omit .Values.podSecurityContext "runAsUser" "runAsGroup" "fsGroup") }}
{{- else }}
{{- toYaml .Values.podSecurityContext }}
{{- end }}
{{- end }}

{{- define "gengate.containerSecurityContext" -}}
{{- if include "gengate.platformAssignsIds" . }}
{{- toYaml (omit .Values.securityContext "runAsUser" "runAsGroup") }}
{{- else }}
{{- toYaml .Values.securityContext }}
{{- end }}
{{- end }}
