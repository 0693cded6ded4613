package io.hicache.serve.http;

/**
 * A request the server refuses, with the HTTP status and the one-line message its error object carries. Thrown by
 * the protocol classes while they parse and validate; {@link ApiHandler} turns it into the response.
 */
final class ApiException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int status;
    final String type;
    final String param;

    ApiException(int status, String type, String param, String message) {
        super(message.replace('\n', ' '), null, false, false);
        this.status = status;
        this.type = type;
        this.param = param;
    }

    /** 400, invalid_request_error, naming the field. */
    static ApiException bad(String param, String message) {
        return new ApiException(400, "invalid_request_error", param, message);
    }
}
