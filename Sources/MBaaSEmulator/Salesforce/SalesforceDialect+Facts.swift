import Foundation
import MBaaSCore

extension SalesforceDialect {
    /// The rule an answer follows (`shared/reference/salesforce.md`, with its evidence), named by the code that builds
    /// the answer: each route of ``SalesforceCall/handler()`` names the fact of its success and of its failure.
    ///
    /// With ``Configuration/namesFacts`` the answer carries the fact's ``text`` in the `X-MBaaS-Fact` header, which
    /// MBaaSReplay's recorder moves into the recorded exchange (so cassettes recorded from the dialect are
    /// `simulated` and say why); without it (the default, `mbaas serve`) nothing is added.
    enum Fact: Sendable {
        case token, userinfo, records, recordErrors, query, queryErrors, collections, composite, files, tooLarge, unknownPath

        static let header = "X-MBaaS-Fact"
        static let reference = "salesforce.md"

        var text: String {
            let r = Self.reference
            switch self {
            case .token: return "[capture] \(r) Authentication: POST /services/oauth2/token password and refresh_token grants answer {access_token, instance_url, id, token_type, issued_at, signature}; errors 400 {error, error_description} (invalid_grant, invalid_client_id, invalid_client)"
            case .userinfo: return "[doc] \(r) Authentication: GET /services/oauth2/userinfo answers the OpenID body; [sdk] 403 Bad_OAuth_Token without a valid token"
            case .records: return "[capture] \(r) sObject CRUD: create 201 {id,success,errors} with a relative Location; GET with attributes; PATCH and DELETE 204 without a body"
            case .recordErrors: return "[capture] \(r) REST error shape and codes: a JSON array [{message,errorCode,fields?}]; 401 INVALID_SESSION_ID; 404 NOT_FOUND / ENTITY_IS_DELETED; 400 INVALID_FIELD; [sdk] 412 for If-Unmodified-Since"
            case .query: return "[capture] \(r) Query: {totalSize,done,nextRecordsUrl?,records}, pages of at most 2000 rows, totalSize on every page; COUNT() answers records []"
            case .queryErrors: return "[capture] \(r) Query: 400 [{message,errorCode:MALFORMED_QUERY}] for SOQL that does not parse; 401 INVALID_SESSION_ID"
            case .collections: return "[sdk] \(r) Composite and sObject Collections: 200 with one {id?,success,errors:[{statusCode,message,fields}]} per record; allOrNone rolls back with ALL_OR_NONE_OPERATION_ROLLED_BACK"
            case .composite: return "[doc] \(r) Composite and sObject Collections: POST /composite {allOrNone, compositeRequest:[{method,url,referenceId,body}]} (at most 25) answers 200 {compositeResponse:[{body,httpHeaders,httpStatusCode,referenceId}]}; [doc] with allOrNone a failure rolls back the others, which answer PROCESSING_HALTED"
            case .files: return "[capture] \(r) Files and describe: ContentVersion VersionData as base64 on create; GET …/VersionData answers the raw bytes"
            case .tooLarge: return "[inferred] \(r) Files and describe: JSON bodies are capped (50 MB); the answer to a larger one is not recorded"
            case .unknownPath: return "[capture] \(r) REST error shape and codes: 404 NOT_FOUND \"The requested resource does not exist\""
            }
        }
    }

    /// The facts of one route's answers: the one a success follows and the one a failure follows.
    struct Facts: Sendable {
        var success: Fact
        var failure: Fact

        init(_ both: Fact) { (success, failure) = (both, both) }
        init(success: Fact, failure: Fact) { (self.success, self.failure) = (success, failure) }
    }

    /// The answer with its fact named, when the configuration asks for it.
    func naming(_ fact: Fact, _ response: TransportResponse) -> TransportResponse {
        guard configuration.namesFacts else { return response }
        var named = response
        named.headers[HTTPField.Name(Fact.header)!] = fact.text
        return named
    }
}
