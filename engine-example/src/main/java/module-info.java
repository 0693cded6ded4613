/**
 * The toy serving engine of docs/INTEGRATION.md. It reads only {@code io.hicache.core}'s exported packages;
 * because this module is compiled on the module path, engine code here that names an internal type fails to
 * compile.
 */
module io.hicache.example {
    requires io.hicache.core;

    exports io.hicache.example;
}
