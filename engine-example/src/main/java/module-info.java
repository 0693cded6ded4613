/**
 * The toy serving engine of docs/INTEGRATION.md. Its engine code is the tests compiled into this module (package
 * {@code io.hicache.example}); they read only {@code io.hicache.core}'s exported packages and take their device
 * pages from the library's {@link io.hicache.core.DevicePagePool}. Because this module is compiled on the module
 * path (its tests patched into it), engine code here that names an internal type fails to compile. It exports
 * nothing: no one links against the toy engine.
 */
module io.hicache.example {
    requires transitive io.hicache.core;
}
