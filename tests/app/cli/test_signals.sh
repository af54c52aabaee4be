#!/usr/bin/env bash
# Signals sent to cco while the program runs, and the program's processes when cco ends (issue 46
# item 3). At a real pty: a Ctrl-C at the
# terminal reaches the program once (the terminal sends it to the whole foreground group, the
# program in it; cco forwarded it a second time, cutting the program's own clean-up short), and a
# SIGTERM sent to cco alone reaches the program once (forwarded). GPU-free: the program is a
# Python script that counts what it gets (the preload library loads into it and does nothing).
set -u
cco=${CCO_BIN:?}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null || { echo "FAIL: python3 is needed (scripts/setup.sh installs it)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset CCO_POLICY CCO_PLAN CCO_COMPARE CCO_DISABLE

cat >"$tmp/prog.py" <<'PY'
import os, signal, sys, time
got = {"INT": 0, "TERM": 0}
def h(s, f):
    got["INT" if s == signal.SIGINT else "TERM"] += 1
signal.signal(signal.SIGINT, h)
signal.signal(signal.SIGTERM, h)
open(sys.argv[1], "w").write(str(os.getpid()))
t = time.time()
while time.time() - t < 1.5:
    time.sleep(0.02)
print("got INT=%d TERM=%d" % (got["INT"], got["TERM"]), flush=True)
PY
# drive.py READY HOW CMD...: CMD at a pty; once READY exists, a Ctrl-C typed at the terminal
# (HOW=ctrl-c) or a SIGTERM to cco alone (HOW=term); prints what came out.
cat >"$tmp/drive.py" <<'PY'
import os, pty, signal, sys, time
ready, how, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
t = time.time()
while not os.path.exists(ready) and time.time() - t < 30:
    time.sleep(0.02)
time.sleep(0.2)
if how == "ctrl-c":
    os.write(fd, b"\x03")
else:
    os.kill(pid, signal.SIGTERM)
out = b""
while True:
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
os.waitpid(pid, 0)
print(out.decode(errors="replace").replace("\r", ""))
PY

for how in ctrl-c term; do
  want="got INT=1 TERM=0"
  [ "$how" = term ] && want="got INT=0 TERM=1"
  rm -f "$tmp/ready"
  out=$(cd "$tmp" && timeout 60 python3 drive.py "$tmp/ready" "$how" \
          "$cco" run --compare off,priority --no-diagnose -- python3 prog.py "$tmp/ready" 2>&1)
  grep -qE "(^|\^C)$want$" <<<"$out" || fail "$how under cco run --compare: the program should get one signal ($want): $out"
done

# A SIGTERM while cco reads the step files (the program has ended) removes cco's temporary step
# folder and ends cco by that signal (it stayed behind: 106 MB for 1M steps). The program leaves a
# step file of 1.5M steps (about 1-2 s to read), says so, and exits; the signal comes 0.3 s later.
cat >"$tmp/bigsteps.py" <<'PY'
import json, os, sys
d = os.environ["CCO_STEPS_DIR"]
steps = ",".join('{"step":%d,"config":%d,"host_ms":10.5,"gpu_ms":10.25,"regular":true}' % (i, i % 2)
                 for i in range(1500000))
with open(os.path.join(d, "steps-rank7.json"), "w") as f:
    f.write('{"schema":"ccoverlap.steps","schema_version":"1.0.0","pid":%d,"rank":7,"device":0,'
            '"source":"marker","period":0,"collectives":0,"locks":1,"mismatches":0,'
            '"configs":["off","priority"],"warmup":0,"ended":"exit","steps":[%s]}' % (os.getpid(), steps))
open(sys.argv[1], "w").close()
PY
mkdir -p "$tmp/tmpdir"
rm -f "$tmp/done"
TMPDIR="$tmp/tmpdir" "$cco" run --compare off,priority --no-diagnose -- python3 "$tmp/bigsteps.py" "$tmp/done" >/dev/null 2>&1 &
ccopid=$!
for _ in $(seq 600); do [ -e "$tmp/done" ] && break; sleep 0.05; done
sleep 0.3
kill -TERM "$ccopid" 2>/dev/null
wait "$ccopid"
rc=$?
left=$(find "$tmp/tmpdir" -mindepth 1 -maxdepth 1 | head -3)
[ -e "$tmp/done" ] || fail "the big-step program never ended"
[ "$rc" = 143 ] || fail "cco run --compare got SIGTERM while reading the steps: exit $rc (want 143: ended by it; did the report end first?)"
[ -z "$left" ] || fail "cco run --compare's temporary step folder stayed after a SIGTERM during the report: $left"

# cco tune -- CMD ends the program's processes with it: workers a launcher left running when it
# exited are ended once it is reaped, and cco killed outright (SIGKILL, `timeout -k`) takes the
# launcher with it (a parent-death SIGTERM), which ends its workers as torchrun does.
"$cco" tune --out "$tmp/left.json" -- sh -c "sleep 300 & echo \$! >'$tmp/left.pid'; exit 0" >/dev/null 2>&1
left=$(cat "$tmp/left.pid" 2>/dev/null)
[ -n "$left" ] && ! kill -0 "$left" 2>/dev/null || { fail "a worker the launcher left ran on after cco tune ended"; kill "$left" 2>/dev/null; }
"$cco" tune --out "$tmp/killed.json" -- sh -c "echo \$\$ >'$tmp/launcher.pid'; trap 'exit 0' TERM; while :; do sleep 0.1; done" >/dev/null 2>&1 &
ccopid=$!
for _ in $(seq 100); do [ -s "$tmp/launcher.pid" ] && break; sleep 0.1; done
kill -9 "$ccopid"
wait "$ccopid" 2>/dev/null
launcher=$(cat "$tmp/launcher.pid" 2>/dev/null)
for _ in $(seq 50); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
[ -n "$launcher" ] && ! kill -0 "$launcher" 2>/dev/null || { fail "the launcher ran on after cco tune was killed"; kill -9 "$launcher" 2>/dev/null; }

[ $fails = 0 ] && echo "signal tests: all passed" || echo "signal tests: $fails failed"
[ $fails = 0 ]
