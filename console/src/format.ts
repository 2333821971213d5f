// How numbers, times and Slurm's words are shown: times in the user's zone (UTC on
// hover), every number with its unit, pending reasons in plain words with Slurm's name.

const localTime = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
});

/** A timestamp in the user's time zone, and its UTC form for the hover title. */
export function formatTime(iso: string | null | undefined): { local: string; utc: string } | null {
  if (!iso) return null;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return { local: iso, utc: iso };
  return { local: localTime.format(date), utc: date.toISOString().replace(".000Z", "Z") + " (UTC)" };
}

/** A duration in seconds as `2 d 3 h`, `3 h 12 min`, `4 min 5 s`, `45 s`. */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return "unlimited";
  let s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (d > 0) return h > 0 ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`;
  if (m > 0) return s > 0 ? `${m} min ${s} s` : `${m} min`;
  return `${s} s`;
}

/** Memory in MiB, shown in the largest binary unit that keeps it readable. */
export function formatMiB(mib: number | null | undefined): string {
  if (mib === null || mib === undefined) return "–";
  if (mib >= 1024 * 1024) return `${round(mib / (1024 * 1024))} TiB`;
  if (mib >= 1024) return `${round(mib / 1024)} GiB`;
  return `${mib} MiB`;
}

function round(x: number): string {
  return x >= 100 ? x.toFixed(0) : x.toFixed(1).replace(/\.0$/, "");
}

/** Count with its noun: `1 GPU`, `4 GPUs`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Slurm's pending reasons (as Berth's scheduler names them) in plain words. */
const REASONS: Record<string, string> = {
  Resources: "Waiting for GPUs, CPUs or memory",
  Priority: "Behind higher-priority jobs",
  Dependency: "Waiting for a dependency",
  DependencyNeverSatisfied: "Its dependency can never be satisfied",
  JobHeldUser: "Held by its user",
  JobHeldAdmin: "Held by an operator",
  BeginTime: "Waiting for its begin time",
  Reservation: "Waiting for its reservation",
  ReservationDeleted: "Its reservation was deleted",
  ReqNodeNotAvail: "A node it needs is unavailable",
  NodeDown: "A node it needs is down",
  PartitionTimeLimit: "Time limit above the partition's maximum",
  PartitionNodeLimit: "More nodes than the partition allows",
  PreviousRunEnding: "Its previous run is still ending",
  JobArrayTaskLimit: "At the array's running-task limit",
  AssocGrpGRES: "At its account's GPU limit",
  AssocGrpCpuLimit: "At its account's CPU limit",
  AssocGrpNodeLimit: "At its account's node limit",
  QOSGrpGRES: "At its QOS's GPU limit",
  QOSGrpCpuLimit: "At its QOS's CPU limit",
  QOSGrpNodeLimit: "At its QOS's node limit",
  QOSMaxGRESPerUser: "At its QOS's GPU limit per user",
  QOSMaxGRESPerAccount: "At its QOS's GPU limit per account",
  QOSMaxCpuPerUserLimit: "At its QOS's CPU limit per user",
  QOSMaxCpuPerAccountLimit: "At its QOS's CPU limit per account",
  QOSMaxNodePerUserLimit: "At its QOS's node limit per user",
  QOSMaxNodePerAccountLimit: "At its QOS's node limit per account",
  QOSMaxJobsPerUserLimit: "At its QOS's job limit per user",
  QOSMaxWallDurationPerJobLimit: "Time limit above its QOS's maximum",
  "launch failed requeued held": "Held after failing to launch three times",
  NonZeroExitCode: "Ended with a non-zero exit code",
  RaisedSignal: "Killed by a signal",
  TimeLimit: "Reached its time limit",
  OutOfMemory: "Ran out of memory",
  JobLaunchFailure: "Could not be launched",
  SystemFailure: "Given up by Berth after its run hung",
  InactiveLimit: "Its allocation's client stopped answering",
  DeadLine: "Could not end before its deadline",
};

/** `Waiting for GPUs, CPUs or memory (Resources)`; a reason without plain words as it is. */
export function formatReason(reason: string | null | undefined): string {
  if (!reason || reason === "None") return "";
  const plain = REASONS[reason];
  return plain ? `${plain} (${reason})` : reason;
}

/** Job states that are over: no action but requeue applies. */
export const ENDED_STATES = new Set([
  "COMPLETED",
  "FAILED",
  "TIMEOUT",
  "CANCELLED",
  "NODE_FAIL",
  "PREEMPTED",
  "OUT_OF_MEMORY",
  "BOOT_FAIL",
  "DEADLINE",
]);

/** Whether a job's reason says it is held (so Release applies). */
export function isHeld(reason: string | null | undefined): boolean {
  return !!reason && (reason.startsWith("JobHeld") || reason.endsWith("held"));
}
