import Foundation
import MBaaSCore
import MBaaSParseWire

extension ParseDialect {
    /// The documented rule an answer follows ([doc] `parse.md` sections, which cite the REST guide and parse-server's
    /// specs), named by the code that builds the answer: each route of ``ParseCall/handler()`` names the fact of its
    /// success and of its failure, and the refusals in ``respond(to:inBatch:)`` name theirs.
    ///
    /// With ``Configuration/namesFacts`` the answer carries the fact's ``text`` in the `X-MBaaS-Fact` header, which
    /// MBaaSReplay's recorder moves into the recorded exchange (it never reaches the client's code or a cassette's
    /// headers); without it (the default, `mbaas serve`) nothing is added.
    enum Fact: Sendable {
        case transport, files, logIn, signUp, batch, roles, queries, queryErrors, objects, objectErrors, unknownPath

        /// The header an answer names its fact in (`Interaction.factHeader` of MBaaSReplay).
        static let header = "X-MBaaS-Fact"
        static let reference = "parse.md"

        var text: String {
            let r = Self.reference
            switch self {
            case .transport: return "[doc] \(r) Transport and authentication: a wrong application id or key is 403 {\"error\":\"unauthorized\"}"
            case .files: return "[doc] \(r) Files: POST /files/{name} raw body 201 {url, name} with a random prefix; GET the url; DELETE with the master key only"
            case .logIn: return "[doc] \(r) Users and sessions: POST /login {username,password} answers the user with sessionToken; POST /logout; GET /users/me; 101 bad login, 209 invalid session"
            case .signUp: return "[doc] \(r) Users and sessions: POST /users 201 {objectId, createdAt, sessionToken}; 202 username taken; anonymous users through authData.anonymous"
            case .batch: return "[doc] \(r) Batch: POST /batch {requests:[{method,path,body}]} answers one {success}|{error} per request, not atomic"
            case .roles: return "[doc] \(r) Roles and ACL: _Role {name, users, roles} relations; ACL keys *, user ids, role:Name"
            case .queries: return "[doc] \(r) Queries: where/order/limit/skip/keys/count=1 answer {results[, count]}"
            case .queryErrors: return "[doc] \(r) Error codes: 102 invalid query; 209 invalid session"
            case .objects: return "[doc] \(r) Objects: POST 201 {objectId, createdAt} with Location; GET the object with objectId/createdAt/updatedAt/ACL; PUT 200 {updatedAt}; DELETE 200 {}; __op Increment/Add/AddUnique/Remove/Delete/AddRelation/RemoveRelation"
            case .objectErrors: return "[doc] \(r) Error codes: {code, error}; 101 object not found (also for an object the ACL hides); 111 invalid type; 105 invalid field name"
            case .unknownPath: return "[inferred] an unknown path is Express's 404"
            }
        }
    }

    /// The facts of one route's answers: the one a success follows and the one a failure follows.
    struct Facts: Sendable {
        var success: Fact
        var failure: Fact

        init(_ both: Fact) { (success, failure) = (both, both) }
        init(success: Fact, failure: Fact) { (self.success, self.failure) = (success, failure) }

        func of(_ response: TransportResponse) -> Fact { response.isSuccess ? success : failure }
    }

    /// The answer with its fact named, when the configuration asks for it.
    func naming(_ fact: Fact, _ response: TransportResponse) -> TransportResponse {
        guard configuration.namesFacts else { return response }
        var named = response
        named.headers[Fact.header] = fact.text
        return named
    }
}
