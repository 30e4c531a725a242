{{/* Labels every object carries (config/default adds app.kubernetes.io/part-of the same way). */}}
{{- define "homecluster.labels" -}}
app.kubernetes.io/name: homecluster
app.kubernetes.io/part-of: homecluster
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The operator's pods: the Deployment's selector and the Services' (fixed, as config/manager). */}}
{{- define "homecluster.selector" -}}
app.kubernetes.io/name: homecluster
app.kubernetes.io/component: controller
{{- end -}}

{{/* The operator's image: repository:tag, and @digest when image.digest pins it (checked: sha256:<64 hex>). */}}
{{- define "homecluster.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- with .Values.image.digest -}}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" .) -}}
{{- fail (printf "image.digest %q is not a digest: give sha256: and 64 hex digits (crane digest IMAGE)" .) -}}
{{- end -}}
{{- $ref = printf "%s@%s" $ref . -}}
{{- end -}}
{{- $ref -}}
{{- end -}}

{{/* The operator's ServiceAccount: serviceAccount.name, else homecluster-controller. */}}
{{- define "homecluster.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default "homecluster-controller" -}}
{{- end -}}

{{/* A cluster DNS name of a Service in the release's namespace. */}}
{{- define "homecluster.svc" -}}
{{ .name }}.{{ .ns }}.svc
{{- end -}}

{{/* The namespace of lifecycle Jobs and of the Secrets slots may name: jobNamespace, else the release's. */}}
{{- define "homecluster.jobNamespace" -}}
{{- .Values.jobNamespace | default .Release.Namespace -}}
{{- end -}}

{{/* certificates.mode, checked: cert-manager, self-signed or secrets. */}}
{{- define "homecluster.certMode" -}}
{{- $mode := .Values.certificates.mode -}}
{{- if hasKey (.Values.certManager | default dict) "enabled" -}}
{{- fail "certManager.enabled was replaced by certificates.mode (cert-manager, self-signed or secrets; docs/install.md): certManager.enabled=false with your own Secrets and webhook.caBundle is certificates.mode=secrets" -}}
{{- end -}}
{{- if not (has $mode (list "cert-manager" "self-signed" "secrets")) -}}
{{- fail (printf "certificates.mode must be cert-manager, self-signed or secrets, not %q (docs/install.md)" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}
