#!/usr/bin/env bash
# A real one-node Slurm cluster on localhost for the Slurm target's tests: installs slurm-wlm, munge and
# podman when missing (Debian packages), writes its own slurm.conf, starts munged, slurmctld and slurmd as root
# and waits until sinfo shows the node idle. Idempotent: a cluster that already answers is left alone.
#
# No accounting database: the target follows jobs with squeue --states=all (finished jobs stay visible
# for MinJobAge seconds), so sacct is not needed.
#
# Usage: scripts/slurm-up.sh [stop]
set -euo pipefail
CONF=/etc/slurm/slurm.conf
LOG=/var/log/slurm

stop() {
  pkill -x slurmd 2>/dev/null || true
  pkill -x slurmctld 2>/dev/null || true
}
if [ "${1:-}" = stop ]; then stop; exit 0; fi

if [ "$(id -u)" != 0 ]; then echo "slurm-up: needs root (it starts slurmctld and slurmd)" >&2; exit 1; fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v podman >/dev/null; then
  # the nodes' container runtimes besides Docker: podman (with catatonit for --init)
  echo "slurm-up: installing slurm-wlm, munge and podman"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge podman catatonit >/dev/null
fi

# munge: a key, its folders, the daemon
mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  if command -v mungekey >/dev/null; then mungekey --create --force >/dev/null 2>&1 || true; fi
  [ -s /etc/munge/munge.key ] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge 2>/dev/null || true
chmod 0700 /etc/munge && chmod 0400 /etc/munge/munge.key
if ! munge -n >/dev/null 2>&1; then
  if id munge >/dev/null 2>&1; then
    su -s /bin/sh munge -c "munged" 2>/dev/null || munged --force
  else
    munged --force
  fi
  for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
fi

if sinfo -h -o %T 2>/dev/null | grep -Eq 'idle|mix|alloc'; then
  echo "slurm-up: the cluster is up ($(sinfo -h -o '%N %T' | head -1))"
  exit 0
fi

# slurm.conf: one node, this machine's CPUs and most of its memory
cpus=$(nproc)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 8 / 10 ))
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd "$LOG"
cat >"$CONF" <<EOF
# written by jupyter-promote's scripts/slurm-up.sh
ClusterName=promote
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
JobAcctGatherParams=OverMemoryKill
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=600
MaxArraySize=10001
MaxJobCount=100000
DefMemPerCPU=512
SchedulerParameters=sched_min_interval=100000
MpiDefault=none
NodeName=localhost CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
[ -f /etc/slurm/cgroup.conf ] || echo "CgroupPlugin=autodetect" >/etc/slurm/cgroup.conf

stop
sleep 0.5
slurmctld -c 2>>"$LOG/start.log" || slurmctld 2>>"$LOG/start.log"
slurmd 2>>"$LOG/start.log"
for _ in $(seq 150); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
  case "$state" in
    idle*|mix*|alloc*) echo "slurm-up: the cluster is up (localhost $state, $cpus CPUs, ${mem_mb} MB)"; exit 0 ;;
    down*|drain*) scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true ;;
  esac
  sleep 0.2
done
echo "slurm-up: the node did not become idle; last lines of the logs:" >&2
tail -n 20 "$LOG/slurmctld.log" "$LOG/slurmd.log" "$LOG/start.log" >&2 || true
exit 1
