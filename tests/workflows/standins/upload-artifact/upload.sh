#!/usr/bin/env bash
set -euo pipefail
: "${ACT_ARTIFACTS:?upload-artifact stand-in: ACT_ARTIFACTS (the local artifact store) is not set}"
dest="$ACT_ARTIFACTS/$NAME"
if [ -e "$dest" ] && [ "$OVERWRITE" != "true" ]; then
    echo "::error::an artifact named $NAME was already uploaded in this run (v4 refuses; set overwrite)"
    exit 1
fi
rm -rf "$dest"
staging=$(mktemp -d)
shopt -s nullglob globstar
[ "$HIDDEN" = "true" ] && shopt -s dotglob
count=0
while IFS= read -r pattern; do
    pattern="${pattern#"${pattern%%[![:space:]]*}"}"
    [ -n "$pattern" ] || continue
    # shellcheck disable=SC2206  # the pattern is a glob, expanded here on purpose
    matches=($pattern)
    for match in "${matches[@]}"; do
        if [ -d "$match" ]; then
            cp -a "$match"/. "$staging"/
        else
            cp -a "$match" "$staging"/
        fi
    done
done <<< "$PATHS"
count=$(find "$staging" -type f | wc -l)
if [ "$count" -eq 0 ]; then
    rm -rf "$staging"
    case "$IF_NO_FILES" in
        error) echo "::error::no files were found with the provided path: $PATHS"; exit 1 ;;
        warn) echo "::warning::no files were found with the provided path: $PATHS. No artifact will be uploaded." ;;
    esac
    exit 0
fi
mkdir -p "$ACT_ARTIFACTS"
mv "$staging" "$dest"
echo "artifact-id=$NAME" >> "$GITHUB_OUTPUT"
echo "artifact-url=file://$dest" >> "$GITHUB_OUTPUT"
echo "upload-artifact stand-in: $count file(s) as $NAME"
