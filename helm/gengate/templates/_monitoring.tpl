{{/*
How this release's alerts and dashboards find its series: one place, read by prometheusrule.yaml and
dashboards.yaml. The repository's rule file selects `job="gengate"` and aggregates `by (namespace, job)`
(prometheus/gengate.rules.yaml says so at its top); here those two texts become the release's selector
and aggregation labels, and every runbook link takes its base from metrics.runbookBaseUrl.
*/}}

{{/*
The job label of the release's series: the metrics Service's name, which the ServiceMonitor's scrape
gives as job (the Prometheus Operator's default), unless metrics.selector.job says otherwise.
*/}}
{{- define "gengate.monitoring.job" -}}
{{- default (include "gengate.suffixedName" (list . "metrics")) .Values.metrics.selector.job }}
{{- end }}

{{- define "gengate.monitoring.namespace" -}}
{{- default .Release.Namespace .Values.metrics.selector.namespace }}
{{- end }}

{{/*
The PromQL label matchers of the release's series.
*/}}
{{- define "gengate.monitoring.selector" -}}
{{- $matchers := list (printf "namespace=%q" (include "gengate.monitoring.namespace" .)) (printf "job=%q" (include "gengate.monitoring.job" .)) }}
{{- with .Values.metrics.selector.extraMatchers }}
{{- $matchers = append $matchers . }}
{{- end }}
{{- join ", " $matchers }}
{{- end }}

{{/*
The alert rules' groups, rewritten for this release: the default selector `job="gengate"` becomes the
release's, `namespace, job` (every by and on clause begins so) gains metrics.aggregationLabels, and each
runbook_url keeps its anchor on metrics.runbookBaseUrl.
*/}}
{{- define "gengate.monitoring.ruleGroups" -}}
{{- $file := .Files.Get "files/gengate.rules.yaml" }}
{{- if not $file }}
{{- fail "files/gengate.rules.yaml is missing from the chart: run `npm run chart:sync` (copies prometheus/gengate.rules.yaml)" }}
{{- end }}
{{- $selector := include "gengate.monitoring.selector" . }}
{{- $aggregation := join ", " (concat (list "namespace" "job") .Values.metrics.aggregationLabels) }}
{{- $runbookBase := .Values.metrics.runbookBaseUrl }}
{{- $groups := get ($file | fromYaml) "groups" }}
{{- range $group := $groups }}
{{- range $rule := $group.rules }}
{{- $_ := set $rule "expr" ($rule.expr | replace "job=\"gengate\"" $selector | replace "namespace, job" $aggregation) }}
{{- $anchor := splitList "#" $rule.annotations.runbook_url | last }}
{{- $_ := set $rule.annotations "runbook_url" (printf "%s#%s" $runbookBase $anchor) }}
{{- end }}
{{- end }}
{{- toYaml $groups }}
{{- end }}

{{/*
A dashboard of dashboards/ (parsed JSON, changed in place) made this release's: its namespace and job
variables open on the release's, its cluster variable shows when the alerts aggregate by cluster, and
its runbook links take their base from metrics.runbookBaseUrl.
Called with (dict "dashboard" <parsed JSON> "root" $).
*/}}
{{- define "gengate.monitoring.adaptDashboard" -}}
{{- $root := .root }}
{{- $opensOn := dict "namespace" (include "gengate.monitoring.namespace" $root) "job" (include "gengate.monitoring.job" $root) }}
{{- range $variable := .dashboard.templating.list }}
{{- with get $opensOn $variable.name }}
{{- $_ := set $variable "current" (dict "text" . "value" .) }}
{{- end }}
{{- if and (eq $variable.name "cluster") (has "cluster" $root.Values.metrics.aggregationLabels) }}
{{- $_ := set $variable "hide" 0 }}
{{- end }}
{{- end }}
{{- range $panel := .dashboard.panels }}
{{- range $link := $panel.links | default list }}
{{- if hasPrefix "Runbook: " $link.title }}
{{- $_ := set $link "url" (printf "%s#%s" $root.Values.metrics.runbookBaseUrl (splitList "#" $link.url | last)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
