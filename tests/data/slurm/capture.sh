#!/bin/bash
# Regenerates the captures in tests/data/slurm/<series>/. Runs INSIDE the Slurm
# stack container as the submit user, e.g.
#   docker compose -p X exec -T -u submitter slurm bash -s main   < tests/data/slurm/capture.sh
#   docker compose -p X exec -T -u slurm     slurm bash -s sacct  < tests/data/slurm/capture.sh
#   docker compose -p X exec -T -u submitter slurm bash -s finish < tests/data/slurm/capture.sh
#   docker compose -p X cp slurm:/tmp/capture/. tests/data/slurm/<series>/
# (`sacct -c` runs as the SlurmUser "slurm": see stacks/slurm/README.md.)
# Submits: one job that exits 0, one that exits 3, one sleep that is cancelled,
# one sleep left running and one held job, then records raw command outputs.
set -u
phase=${1:?phase: main, sacct or finish}
out=/tmp/capture
if [ "$phase" = main ]; then rm -rf "$out"; mkdir -p "$out"; chmod 0777 "$out"; fi
cd "$out"
UNKNOWN=4999999   # a job id that was never issued

# run NAME CMD...: stdout, stderr and exit status of CMD in one file, with
# marker lines of their own ("# stdout:", "# stderr:").
run() {
    local name=$1; shift
    local so se rc
    so=$(mktemp); se=$(mktemp)
    "$@" >"$so" 2>"$se"; rc=$?
    { printf '# command: %s\n# exit: %s\n# stdout:\n' "$*" "$rc"; cat "$so"
      printf '# stderr:\n'; cat "$se"; } > "$name"
    rm -f "$so" "$se"
}
# Raw stdout to FILE; if the command fails or writes to stderr, its exit
# status and stderr go to ERRFILE (and an empty FILE is removed).
raw() {
    local file=$1 errfile=$2; shift 2
    local rc
    "$@" > "$file" 2> "$errfile.tmp"; rc=$?
    if [ "$rc" -ne 0 ] || [ -s "$errfile.tmp" ]; then
        { printf '# command: %s\n# exit: %s\n# stderr:\n' "$*" "$rc"; cat "$errfile.tmp"; } > "$errfile"
    fi
    rm -f "$errfile.tmp"
    [ -s "$file" ] || rm -f "$file"
}
state() { squeue -h -t all -j "$1" -o %T 2>/dev/null; }
wait_state() {  # wait_state ID REGEX
    for _ in $(seq 1 300); do state "$1" | grep -qE "^($2)$" && return 0; sleep 0.1; done
    echo "timeout waiting for job $1 to reach $2 (now: $(state "$1"))" >&2; return 1
}

case $phase in
main)
sinfo -V > sinfo-V.txt
scontrol ping > scontrol-ping.txt
sinfo -h -o '%t' > sinfo-state.txt

mkdir -p /work/jobs/cap-ok /work/jobs/cap-fail /work/jobs/cap-cancel /work/jobs/cap-run /work/jobs/cap-held
t0=$EPOCHREALTIME
sbatch --parsable -J ok --chdir=/work/jobs/cap-ok -o ok.out --wrap 'echo hello from ok' > sbatch-parsable.txt
ok=$(cat sbatch-parsable.txt)
wait_state "$ok" COMPLETED
t1=$EPOCHREALTIME
fail=$(sbatch --parsable -J fail --chdir=/work/jobs/cap-fail -o fail.out --wrap 'echo failing; exit 3')
cancel=$(sbatch --parsable -J cancel --chdir=/work/jobs/cap-cancel -o cancel.out --wrap 'sleep 300')
running=$(sbatch --parsable -J running --chdir=/work/jobs/cap-run -o run.out --wrap 'sleep 300')
held=$(sbatch --parsable -J held --hold --chdir=/work/jobs/cap-held -o held.out --wrap 'echo never')
wait_state "$fail" FAILED
wait_state "$cancel" RUNNING
wait_state "$running" RUNNING
scancel "$cancel"
wait_state "$cancel" CANCELLED
sleep 1   # let the completion log catch up

raw scontrol-show-job.txt scontrol-show-job.err scontrol show job -o
raw squeue-all.json squeue-json.err squeue --json -t all
raw squeue-text.txt squeue-text.err squeue -h -t all -o '%i|%T|%r'
run sacct-plain.txt sacct -P -n
run squeue-unknown.txt squeue -j "$UNKNOWN"
run scontrol-unknown.txt scontrol show job "$UNKNOWN"
run squeue-unknown-json.txt squeue --json -j "$UNKNOWN"
echo "$running $held" > .to-cancel

cat > JOBS.md <<EOT
# Slurm $(sinfo -V | awk '{print $2}') captures: which job is which

Captured by \`tests/data/slurm/capture.sh\` as user \`submitter\` in the
pytest-stacks Slurm container (stacks/slurm). Intended outcomes:

| job id | name | submitted with | intended outcome | state at capture time |
|---|---|---|---|---|
| $ok | ok | \`sbatch --parsable -J ok --chdir=/work/jobs/cap-ok -o ok.out --wrap 'echo hello from ok'\` | completed, exit 0 | COMPLETED |
| $fail | fail | \`--wrap 'echo failing; exit 3'\` | failed, exit code 3 | FAILED (3) |
| $cancel | cancel | \`--wrap 'sleep 300'\`, then \`scancel\` while running | cancelled | CANCELLED |
| $running | running | \`--wrap 'sleep 300'\` | still running (cancelled after the capture) | RUNNING |
| $held | held | \`--hold --wrap 'echo never'\` | held, never runs | PENDING (JobHeldUser) |

- never-issued job id used for the *-unknown* files: $UNKNOWN
- \`sbatch-parsable.txt\` is the raw output of the \`sbatch --parsable\` for job $ok.
- Files named like \`*-unknown*.txt\` and \`sacct-plain.txt\` hold a command's
  exit status, stdout and stderr between marker lines (\`# exit:\`, \`# stdout:\`,
  \`# stderr:\`); a \`*.err\` file holds the exit status and stderr of a command
  that failed or complained (e.g. \`squeue --json\` on 20.11); all other files are
  raw stdout.
- Output file of job $ok (\`/work/jobs/cap-ok/ok.out\`): \`$(cat /work/jobs/cap-ok/ok.out 2>&1)\`
- Output file of job $fail (\`/work/jobs/cap-fail/fail.out\`): \`$(cat /work/jobs/cap-fail/fail.out 2>&1)\`
- \`sacct-c*.txt\` and \`jobcomp.log\` were taken as user \`slurm\` (SlurmUser) right
  after the other files, while jobs $running and $held were still running / held
  (so they are not in the completion log).
- Submit-to-COMPLETED time of job $ok (polling squeue every 0.1 s): $(awk "BEGIN{printf \"%.2f\", $t1-$t0}") s
EOT

;;
sacct)
raw sacct-c-format.txt sacct-c-format.err sacct -c -P -n --format=JobID,State,ExitCode
raw sacct-c.txt sacct-c.err sacct -c -P -n
head -n 50 /var/log/slurm/jobcomp.log > jobcomp.log
;;
finish)
# shellcheck disable=SC2046
scancel $(cat .to-cancel)
rm -f .to-cancel
ls -la "$out"
;;
esac
