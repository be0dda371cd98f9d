import { describe, expect, it } from "vitest";
import {
  classifyConnectError,
  classifyHttpStatus,
  errorMessageFromBody,
  streamErrorObject,
} from "../../src/agent/error-classifier.js";

describe("error classifier", () => {
  it("takes the message from an OpenAI error envelope, else the body text", () => {
    expect(errorMessageFromBody('{"error":{"message":"bad key","type":"invalid_request_error"}}')).toBe("bad key");
    expect(errorMessageFromBody('{"error":"plain"}')).toBe("plain");
    expect(errorMessageFromBody("<html>502 Bad Gateway</html>")).toBe("<html>502 Bad Gateway</html>");
    expect(errorMessageFromBody("  ")).toBeUndefined();
  });

  it("maps statuses without a table entry to a non-retryable provider code", () => {
    expect(classifyHttpStatus(418, "p")).toEqual({ layer: "provider", code: "http_418", retryable: false, message: "p: HTTP 418" });
    expect(classifyHttpStatus(504, "p", "gateway timeout").retryable).toBe(true);
  });

  it("names the socket error of a failed connection", () => {
    const cause = Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.invalid"), { code: "ENOTFOUND" });
    const info = classifyConnectError(new TypeError("fetch failed", { cause }), "p");
    expect(info).toMatchObject({ layer: "endpoint", code: "unreachable", retryable: true });
    expect(info.message).toContain("ENOTFOUND");
  });

  it("keeps an in-stream error's code and message", () => {
    expect(streamErrorObject("p", { message: "limit", code: "rate_limited" })).toEqual({
      layer: "provider",
      code: "rate_limited",
      retryable: true,
      message: "p: limit",
    });
    expect(streamErrorObject("p", "weird").code).toBe("stream_error");
  });
});
