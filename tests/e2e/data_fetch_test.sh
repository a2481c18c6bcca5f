#!/usr/bin/env bash
# End to end: `cedar data fetch` and `cedar data list` against a file:// mirror this test writes,
# holding tiny archives in the real layouts (CIFAR-10/100 binary tarballs, MNIST's gzipped IDX
# files, an Imagenette-style tarball) whose sizes and checksums the test computes and hands to
# cedar through a catalog file (CEDAR_DATA_CATALOG). Cases: a fetch that `cedar run` then trains
# on; a second fetch that does nothing (the mirror file is gone, so it cannot have downloaded);
# resuming a half-downloaded .part; a corrupted download; a wrong catalogued checksum; an archive
# that passes its checksum but does not extract; --from FILE and --from URL; a second fetch that
# waits for the first's lock; and the built-in Fashion-MNIST entry against the published files
# (Debian's copy with its original gzip headers restored).
# Usage: data_fetch_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-data.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
MIRROR="$WORK/mirror"; ROOT="$WORK/data"; BUILD="$WORK/build"
mkdir -p "$MIRROR"/{cifar10,cifar100,mnist,imagenette-160,broken} "$BUILD" "$WORK/archives"
unset CEDAR_DATA_MIRROR CEDAR_DATA_CATALOG

# ---- Tiny data sets in the real layouts.
python3 - "$BUILD" <<'PY'
import gzip, os, struct, sys
out = sys.argv[1]
def cifar(path, n, label_bytes, classes, seed):
    with open(path, "wb") as f:
        for i in range(n):
            labels = bytes([(i + seed) % 20, (i + seed) % classes]) if label_bytes == 2 else bytes([(i + seed) % classes])
            f.write(labels + bytes(((i * 7 + j + seed) & 0xff) for j in range(3072)))
os.makedirs(f"{out}/c10/cifar-10-batches-bin")
for b in range(1, 6):
    cifar(f"{out}/c10/cifar-10-batches-bin/data_batch_{b}.bin", 16, 1, 10, b)
cifar(f"{out}/c10/cifar-10-batches-bin/test_batch.bin", 16, 1, 10, 9)
os.makedirs(f"{out}/c100/cifar-100-binary")
cifar(f"{out}/c100/cifar-100-binary/train.bin", 8, 2, 100, 1)
cifar(f"{out}/c100/cifar-100-binary/test.bin", 8, 2, 100, 2)
os.makedirs(f"{out}/mnist")
for prefix, n in (("train", 12), ("t10k", 6)):
    with gzip.open(f"{out}/mnist/{prefix}-images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + bytes((i * 3) & 0xff for i in range(n * 784)))
    with gzip.open(f"{out}/mnist/{prefix}-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))
for split in ("train", "val"):
    os.makedirs(f"{out}/nette/imagenette2-160/{split}/n01440764")
    with open(f"{out}/nette/imagenette2-160/{split}/n01440764/a.JPEG", "wb") as f:
        f.write(os.urandom(300000))  # bytes only: fetching never decodes them
PY
tar -czf "$WORK/archives/cifar-10-binary.tar.gz" -C "$BUILD/c10" cifar-10-batches-bin
tar -czf "$WORK/archives/cifar-100-binary.tar.gz" -C "$BUILD/c100" cifar-100-binary
tar -czf "$WORK/archives/imagenette2-160.tgz" -C "$BUILD/nette" imagenette2-160
head -c 2000 "$WORK/archives/cifar-10-binary.tar.gz" > "$WORK/archives/broken.tar.gz"  # gzip cut short
cp "$WORK/archives/cifar-10-binary.tar.gz" "$MIRROR/cifar10/"
cp "$WORK/archives/broken.tar.gz" "$MIRROR/broken/"
cp "$BUILD"/mnist/*.gz "$MIRROR/mnist/"

size() { stat -c %s "$1"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
md5() { md5sum "$1" | cut -d' ' -f1; }
entry() {  # entry NAME PATH: one file of a catalog, its size and checksums computed here
  printf '{"name": "%s", "size": %s, "sha256": "%s", "md5": "%s"}' "$1" "$(size "$2")" "$(sha "$2")" "$(md5 "$2")"
}
mnist_files=""
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  mnist_files+="${mnist_files:+, }$(entry "$f" "$BUILD/mnist/$f")"
done
cat > "$WORK/catalog.json" <<JSON
{"cifar10": {"files": [$(entry cifar-10-binary.tar.gz "$WORK/archives/cifar-10-binary.tar.gz")]},
 "cifar100": {"files": [$(entry cifar-100-binary.tar.gz "$WORK/archives/cifar-100-binary.tar.gz")]},
 "mnist": {"files": [$mnist_files]},
 "imagenette-160": {"files": [$(entry imagenette2-160.tgz "$WORK/archives/imagenette2-160.tgz")]},
 "broken": {"base": "file://$MIRROR/broken/", "files": [$(entry broken.tar.gz "$WORK/archives/broken.tar.gz")],
            "expect": ["cifar-10-batches-bin/data_batch_1.bin"]}}
JSON
export CEDAR_DATA_CATALOG="$WORK/catalog.json"
fetch() { "$CEDAR" data fetch "$@" --root "$ROOT" --mirror "file://$MIRROR" 2>&1; }
leftovers() { find "$ROOT/.downloads" -name '*.part' -o -name 'unpack.*' | wc -l; }

# ---- A fetch: the files in place, the marker, nothing left over, and a run that trains on it.
out=$(fetch cifar10); rc=$?
check "fetch cifar10 exits 0" equals "$rc" 0
check "it says where the data set is and how to read it" contains "$out" "data.name: cifar10, data.root: $ROOT/cifar10"
check "batch file in the readers' layout, byte for byte" cmp -s "$ROOT/cifar10/cifar-10-batches-bin/data_batch_3.bin" "$BUILD/c10/cifar-10-batches-bin/data_batch_3.bin"
check "marker names the data set and its checksum" contains "$(cat "$ROOT/cifar10/.cedar-fetched")" "$(sha "$WORK/archives/cifar-10-binary.tar.gz")"
check "the source in the marker is the mirror" contains "$(cat "$ROOT/cifar10/.cedar-fetched")" "file://$MIRROR/cifar10/cifar-10-binary.tar.gz"
check "no .part or extraction folder left, archive removed" equals "$(leftovers),$(ls "$ROOT/.downloads/cifar10")" "0,"
cat > "$WORK/tiny.yaml" <<YAML
name: fetched-cifar
suite: e2e-data
model: {name: lenet5}
data: {name: cifar10, root: $ROOT/cifar10}
train: {epochs: 1, batch_size: 16, threads: 1, seed: 3}
optimizer: {lr: 0.01, schedule: constant}
algorithm: dense
YAML
DB="$WORK/run.db"
"$CEDAR" run "$WORK/tiny.yaml" --db "$DB" --quiet > "$WORK/run.log" 2>&1
check "cedar run trains on the fetched data" equals "$(q "SELECT status FROM runs")" completed
check "on all 5 x 16 training images (5 steps of 16)" equals "$(q "SELECT COUNT(*) FROM steps")" 5
check "list: fetched status and folder" contains "$("$CEDAR" data list --root "$ROOT" | grep '^  cifar10 ')" "fetched   $ROOT/cifar10"

# ---- A second fetch does nothing: the mirror's copy is gone, so a download would fail.
rm "$MIRROR/cifar10/cifar-10-binary.tar.gz"
out=$(fetch cifar10); rc=$?
check "second fetch exits 0 without the mirror's file" equals "$rc" 0
check "second fetch says there is nothing to do" contains "$out" "cifar10: already fetched into $ROOT/cifar10"
check "second fetch downloaded nothing" equals "$(grep -c downloading <<< "$out")" 0

# ---- Resume: a .part holding the archive's first half, and a mirror whose copy has a zeroed
# first half. Only a download that continues the .part can end with the right checksum.
nette="$WORK/archives/imagenette2-160.tgz"; half=$(( $(size "$nette") / 2 ))
mkdir -p "$ROOT/.downloads/imagenette-160"
head -c "$half" "$nette" > "$ROOT/.downloads/imagenette-160/imagenette2-160.tgz.part"
{ head -c "$half" /dev/zero; tail -c +$((half + 1)) "$nette"; } > "$MIRROR/imagenette-160/imagenette2-160.tgz"
check "list shows the resumable download" contains "$("$CEDAR" data list --root "$ROOT" | grep '^  imagenette-160 ')" "downloaded, resumable"
out=$(fetch imagenette-160); rc=$?
check "resumed fetch exits 0" equals "$rc" 0
check "it resumed at the first missing byte" contains "$out" "resuming file://$MIRROR/imagenette-160/imagenette2-160.tgz at byte $half"
check "ImageFolder layout in place, the archive's top folder is the data set" cmp -s "$ROOT/imagenette2-160/val/n01440764/a.JPEG" "$BUILD/nette/imagenette2-160/val/n01440764/a.JPEG"
check "train/ beside val/" test -f "$ROOT/imagenette2-160/train/n01440764/a.JPEG"

# ---- A corrupted download: the catalog's checksum is right, the mirror's copy has a byte changed.
cp "$WORK/archives/cifar-100-binary.tar.gz" "$MIRROR/cifar100/"
printf '\x00' | dd of="$MIRROR/cifar100/cifar-100-binary.tar.gz" bs=1 seek=100 conv=notrunc status=none
bad_sha=$(sha "$MIRROR/cifar100/cifar-100-binary.tar.gz"); good_sha=$(sha "$WORK/archives/cifar-100-binary.tar.gz")
out=$(fetch cifar100); rc=$?
check "corrupted download exits non-zero" greater "$rc" 0
check "error names the downloaded file" contains "$out" "checksum mismatch: $ROOT/.downloads/cifar100/cifar-100-binary.tar.gz.part"
check "error gives both sums" contains "$out" "sha256 is $bad_sha, expected $good_sha"
check "the bad download was removed" test ! -e "$ROOT/.downloads/cifar100/cifar-100-binary.tar.gz.part"
check "nothing extracted: no data-set folder" test ! -e "$ROOT/cifar100"
check "no extraction folder left" equals "$(leftovers)" 0
cp "$WORK/archives/cifar-100-binary.tar.gz" "$MIRROR/cifar100/"
mkdir -p "$ROOT/.downloads/cifar100/unpack.killed/cifar-100-binary" && touch "$ROOT/.downloads/cifar100/unpack.killed/cifar-100-binary/train.bin"
out=$(fetch cifar100); rc=$?
check "the next fetch starts afresh and succeeds" equals "$rc,$(grep -c resuming <<< "$out")" "0,0"
check "CIFAR-100 in place" cmp -s "$ROOT/cifar100/cifar-100-binary/test.bin" "$BUILD/c100/cifar-100-binary/test.bin"
check "an extraction a killed fetch left behind is cleaned up" equals "$(leftovers)" 0

# ---- A wrong catalogued checksum (MNIST's labels file): named with both sums, nothing installed.
zeros=$(printf '0%.0s' {1..64})
sed "s/$(sha "$BUILD/mnist/t10k-labels-idx1-ubyte.gz")/$zeros/" "$WORK/catalog.json" > "$WORK/wrong.json"
out=$(CEDAR_DATA_CATALOG="$WORK/wrong.json" fetch mnist); rc=$?
check "wrong checksum exits non-zero" greater "$rc" 0
check "error names the file" contains "$out" "$ROOT/.downloads/mnist/t10k-labels-idx1-ubyte.gz.part"
check "error gives both sums" contains "$out" "sha256 is $(sha "$BUILD/mnist/t10k-labels-idx1-ubyte.gz"), expected $zeros"
check "no mnist folder" test ! -e "$ROOT/mnist"
out=$(fetch mnist); rc=$?
check "with the right catalog the same fetch succeeds" equals "$rc" 0
for f in train-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  check "mnist $f kept gzipped as the IDX reader reads it" cmp -s "$ROOT/mnist/$f" "$BUILD/mnist/$f"
done

# ---- An archive whose checksum matches but that tar cannot extract: nothing installed.
out=$(fetch broken); rc=$?
check "unextractable archive exits non-zero" greater "$rc" 0
check "error names the archive" contains "$out" "broken: cannot extract $ROOT/.downloads/broken/broken.tar.gz"
check "no half-extracted data set" test ! -e "$ROOT/broken"
check "no extraction folder left" equals "$(leftovers)" 0

# ---- --from FILE: an archive already at hand, verified the same way; no network, file kept.
out=$("$CEDAR" data fetch cifar10 --root "$WORK/offline" --from "$WORK/archives/cifar-10-binary.tar.gz" 2>&1); rc=$?
check "--from FILE exits 0" equals "$rc" 0
check "--from FILE downloads nothing" equals "$(grep -c downloading <<< "$out")" 0
check "--from FILE installs the data set" cmp -s "$WORK/offline/cifar10/cifar-10-batches-bin/test_batch.bin" "$BUILD/c10/cifar-10-batches-bin/test_batch.bin"
check "--from FILE leaves the given archive" test -f "$WORK/archives/cifar-10-binary.tar.gz"
out=$("$CEDAR" data fetch cifar100 --root "$WORK/offline" --from "$MIRROR/cifar10/../../archives/broken.tar.gz" 2>&1); rc=$?
check "--from a file that does not match exits non-zero" greater "$rc" 0
check "... naming the file and both sums" contains "$out" "sha256 is $(sha "$WORK/archives/broken.tar.gz"), expected $good_sha"

# ---- --from URL: the archive at a URL of its own (here file://), downloaded and verified.
out=$("$CEDAR" data fetch cifar10 --root "$WORK/by-url" --from "file://$WORK/archives/cifar-10-binary.tar.gz" 2>&1); rc=$?
check "--from URL exits 0" equals "$rc" 0
check "--from URL downloads from that URL" contains "$out" "downloading file://$WORK/archives/cifar-10-binary.tar.gz"
check "--from URL installs the data set" test -f "$WORK/by-url/cifar10/cifar-10-batches-bin/data_batch_5.bin"

# ---- Two fetches of one data set (e.g. one per node on a shared filesystem): the second waits
# for the first's lock before touching the download. Here the test holds the lock; the mirror
# comes from CEDAR_DATA_MIRROR this time.
mkdir -p "$WORK/locked/.downloads/cifar100"
exec 9> "$WORK/locked/.downloads/cifar100/.lock"
flock 9
CEDAR_DATA_MIRROR="file://$MIRROR" "$CEDAR" data fetch cifar100 --root "$WORK/locked" > "$WORK/locked.log" 2>&1 &
pid=$!
while kill -0 "$pid" 2> /dev/null && ! grep -q "waiting for another fetch" "$WORK/locked.log"; do sleep 0.05; done
check "a fetch that finds the lock held says it waits" contains "$(cat "$WORK/locked.log")" "waiting for another fetch of this data set"
check "... and has downloaded nothing meanwhile" equals "$(ls "$WORK/locked/.downloads/cifar100")" ""
flock -u 9; exec 9>&-
wait "$pid"; rc=$?
check "once the lock is free it fetches (mirror from CEDAR_DATA_MIRROR)" equals "$rc" 0
check "... from the mirror" contains "$(cat "$WORK/locked.log")" "downloading file://$MIRROR/cifar100/cifar-100-binary.tar.gz"
check "... into place" test -f "$WORK/locked/cifar100/cifar-100-binary/train.bin"

# ---- The built-in Fashion-MNIST entry against the published files: Debian's copy is the same
# deflate streams recompressed without the file name and with another time stamp; restoring the
# original gzip headers (name and the original mtime) gives back the files the authors published.
unset CEDAR_DATA_CATALOG
debian=/usr/share/datasets/fashion-mnist
if [ "$(sha "$debian/t10k-labels-idx1-ubyte.gz" 2>/dev/null)" = 8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05 ]; then
  python3 - "$debian" "$WORK/fashion-orig" <<'PY'
import os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst)
for name, mtime in (("train-images-idx3-ubyte", 1504176606), ("train-labels-idx1-ubyte", 1504176606),
                    ("t10k-images-idx3-ubyte", 1504176627), ("t10k-labels-idx1-ubyte", 1504176627)):
    d = open(f"{src}/{name}.gz", "rb").read()
    header = b"\x1f\x8b\x08\x08" + struct.pack("<I", mtime) + d[8:10] + name.encode() + b"\0"
    open(f"{dst}/{name}.gz", "wb").write(header + d[10:])
PY
  out=$("$CEDAR" data fetch fashion-mnist --root "$WORK/real" --from "$WORK/fashion-orig" 2>&1); rc=$?
  check "built-in Fashion-MNIST sizes, MD5 and SHA-256 match the published files" equals "$rc" 0
  check "... all four verified" equals "$(grep -c 'verified' <<< "$out")" 4
else
  echo "skip - the built-in Fashion-MNIST check: Debian's dataset-fashion-mnist files are absent or differ"
fi

finish
