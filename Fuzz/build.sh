#!/bin/sh
# Builds the libFuzzer targets (Fuzz/*Fuzz.swift) with swiftc -sanitize=fuzzer,address into .build/fuzz/.
# Needs the package's checkouts (run `swift build` once first). Usage: Fuzz/build.sh; then e.g.
#   .build/fuzz/fuzz-json -runs=1000000 -max_len=4096 .build/fuzz/corpus-json Fuzz/seeds/json
set -eu
cd "$(dirname "$0")/.."
OUT=.build/fuzz
mkdir -p "$OUT"
FLAGS="-O -sanitize=fuzzer,address -parse-as-library -swift-version 6 -enable-upcoming-feature ExistentialAny"
lib() {  # lib NAME SOURCES...: a static library and its module in $OUT ($EXTRA: more flags)
    name=$1; shift
    swiftc $FLAGS ${EXTRA:-} -I "$OUT" -package-name "$name" -module-name "$name" -emit-library -static -emit-module \
        -emit-module-path "$OUT/$name.swiftmodule" -o "$OUT/lib$name.a" "$@"
}
# swift-log's own settings (its Package.swift).
EXTRA="-enable-upcoming-feature MemberImportVisibility -enable-upcoming-feature InternalImportsByDefault -enable-upcoming-feature NonisolatedNonsendingByDefault" \
lib Logging $(find .build/checkouts/swift-log/Sources/Logging -name "*.swift")
lib MBaaSCore $(find Sources/MBaaSCore -name '*.swift')
lib MBaaSReplay $(find Sources/MBaaSReplay -name '*.swift')
for target in JSON Query Cassette; do
    lower=$(echo "$target" | tr 'A-Z' 'a-z')
    swiftc $FLAGS -I "$OUT" -module-name "Fuzz$target" "Fuzz/${target}Fuzz.swift" \
        "$OUT/libMBaaSReplay.a" "$OUT/libMBaaSCore.a" "$OUT/libLogging.a" -o "$OUT/fuzz-$lower"
    mkdir -p "$OUT/corpus-$lower"
done
echo "built: $(ls "$OUT"/fuzz-*)"
