package io.hicache.core;

/**
 * States of one backup (see the state machine in the design notes).
 * RESERVED → COPYING → SEALED → COMMITTED; any of the first three → DRAINING → ABORTED.
 */
public enum BackupState {
    /** Host pages allocated, node pending and device-locked; no copy issued yet. */
    RESERVED,
    /** Attached to a forward; per-layer copies are being issued. */
    COPYING,
    /** Every declared layer was submitted and the final event recorded; waiting for it and for the group. */
    SEALED,
    /** Published on the node; host pages owned by the tree. Terminal. */
    COMMITTED,
    /** Aborted, waiting for copies already issued to finish before pages and locks are released. */
    DRAINING,
    /** Aborted and fully released. Terminal. */
    ABORTED;

    /** True for COMMITTED and ABORTED. */
    public boolean terminal() {
        return this == COMMITTED || this == ABORTED;
    }
}
