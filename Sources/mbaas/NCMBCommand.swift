import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSNCMB

/// `mbaas ncmb …`: NCMB-specific tools.
struct NCMBCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ncmb",
        abstract: "NIFCLOUD mobile backend (NCMB) tools.",
        discussion: """
            NCMB closed on 2024-03-31. Its data API is reached with ncmb://APPLICATION_KEY:CLIENT_KEY@mbaas.api.nifcloud.com \
            (or ncmb+http://…@127.0.0.1:PORT for a local server) through the generic commands; these are the tools \
            specific to NCMB.
            """,
        subcommands: [Signature.self])

    /// `mbaas ncmb signature`: shows the string to sign and the signatures of one request.
    struct Signature: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Compute an NCMB request signature (SignatureVersion 2) and, optionally, a response signature.",
            discussion: """
                The URL's host, percent-encoded path and (for GET) percent-encoded query are signed exactly as given, \
                and the timestamp verbatim. Prints {"stringToSign","signature","responseSignature"} as JSON; \
                responseSignature is null without --response-body.

                Example (the official documentation's vector):
                  mbaas ncmb signature --method GET \\
                    --url 'https://mbaas.api.nifcloud.com/2013-09-01/classes/TestClass?where=%7B%22testKey%22%3A%22testValue%22%7D' \\
                    --application-key 6145f91061916580c742f806bab67649d10f45920246ff459404c46f00ff3e56 \\
                    --client-key 1343d198b510a0315db1c03f3aa0e32418b7a743f8e4b47cbff670601345cf75 \\
                    --timestamp 2013-12-02T02:44:35.452Z
                """)

        @Option(help: "The HTTP method (GET, POST, PUT, DELETE).")
        var method: String = "GET"

        @Option(help: "The full request URL, percent-encoded as it goes on the wire.")
        var url: String

        @Option(name: .customLong("application-key"), help: "The application key.")
        var applicationKey: String

        @Option(name: .customLong("client-key"), help: "The client key (the HMAC key).")
        var clientKey: String

        @Option(help: "The X-NCMB-Timestamp value, signed verbatim (default: now, yyyy-MM-ddTHH:mm:ss.SSSZ).")
        var timestamp: String?

        @Option(name: .customLong("response-body"),
                help: "A file holding a raw response body: also compute X-NCMB-Response-Signature.")
        var responseBody: String?

        func validate() throws {
            guard let parsed = URL(string: url), parsed.host != nil else {
                throw ValidationError("--url must be an absolute URL with a host, got '\(url)'")
            }
            guard ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"].contains(method.uppercased()) else {
                throw ValidationError("--method must be GET, POST, PUT or DELETE, got '\(method)'")
            }
        }

        func run() async throws {
            let signer = NCMBSigner(applicationKey: applicationKey, clientKey: clientKey)
            let stamp = timestamp ?? ISO8601.format(Date())
            let text = try signer.stringToSign(method: method, url: URL(string: url)!, timestamp: stamp)
            var out: JSONObject = ["stringToSign": .string(text), "signature": .string(signer.signature(of: text))]
            if let responseBody {
                let body: Data
                do { body = try Data(contentsOf: URL(fileURLWithPath: responseBody)) } catch {
                    throw ValidationError("cannot read --response-body \(responseBody): \(MBaaSError.describe(error))")
                }
                out["responseSignature"] = .string(signer.responseSignature(stringToSign: text, body: body))
            } else {
                out["responseSignature"] = .null
            }
            output(JSON.object(out).printed())   // a stdout write failure is exit 7 with a message
        }
    }
}
