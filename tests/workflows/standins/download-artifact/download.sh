#!/usr/bin/env bash
set -euo pipefail
: "${ACT_ARTIFACTS:?download-artifact stand-in: ACT_ARTIFACTS (the local artifact store) is not set}"
dest="${DEST:-$GITHUB_WORKSPACE}"
mkdir -p "$dest"
if [ -n "$NAME" ]; then
    if [ ! -d "$ACT_ARTIFACTS/$NAME" ]; then
        echo "::error::Unable to download artifact(s): Artifact not found for name: $NAME"
        exit 1
    fi
    cp -a "$ACT_ARTIFACTS/$NAME"/. "$dest"/
    echo "download-artifact stand-in: $NAME into $dest"
else
    found=0
    if [ -d "$ACT_ARTIFACTS" ]; then
        for folder in "$ACT_ARTIFACTS"/*/; do
            name=$(basename "$folder")
            # shellcheck disable=SC2053  # PATTERN is a glob, matched on purpose
            if [ -n "$PATTERN" ] && [[ $name != $PATTERN ]]; then continue; fi
            found=$((found + 1))
            if [ "$MERGE" = "true" ]; then
                cp -a "$folder". "$dest"/
            else
                mkdir -p "$dest/$name"
                cp -a "$folder". "$dest/$name"/
            fi
        done
    fi
    echo "download-artifact stand-in: $found artifact(s) matching '${PATTERN:-*}' into $dest"
fi
echo "download-path=$dest" >> "$GITHUB_OUTPUT"
