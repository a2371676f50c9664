#!/usr/bin/env bash
# Regenerates screenshots/*.png from real renders of the app (examples/screenshots.rs draws the
# TUI's own view on a TestBackend; rsvg-convert rasterises the SVG with DejaVu Sans Mono).
# Needs: apt-get install librsvg2-bin fonts-dejavu-core
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
command -v rsvg-convert >/dev/null || { echo "install librsvg2-bin (and fonts-dejavu-core)" >&2; exit 1; }
tmp=$(mktemp -d)
cargo run --release --example screenshots -- "$tmp"
mkdir -p screenshots
for svg in "$tmp"/*.svg; do
  rsvg-convert "$svg" -o "screenshots/$(basename "${svg%.svg}").png"
done
rm -rf "$tmp"
ls -l screenshots/
