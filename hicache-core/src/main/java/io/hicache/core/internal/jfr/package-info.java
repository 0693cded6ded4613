/**
 * JDK Flight Recorder events of the controller, named {@code io.hicache.*} in the category "HiCache": what an
 * engineer debugging a latency spike wants on a timeline (commits, aborts, all-layer fallbacks, loads, agreement
 * rounds, a sticky CUDA error).
 *
 * <p>{@link io.hicache.core.internal.jfr.HiCacheEvents} is what the controller calls; each of its methods reads one
 * volatile flag and returns when its event type is disabled, so nothing is built or allocated without a recording.
 * Events on hot paths record no stack trace. Enable them in a recording by name, e.g.
 * {@code recording.enable("io.hicache.BackupCommitted")}, or all at once with
 * {@link io.hicache.core.internal.jfr.HiCacheEvents#enableAll(jdk.jfr.Recording)}.
 */
package io.hicache.core.internal.jfr;
