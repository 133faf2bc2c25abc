// A conversation's messages, newest first, paged both ways (`usePaginationFragment`):
// loadNext pages to older messages (first/after); loadPrevious, after a reconnect, fetches
// what arrived since the newest message shown (last/before its cursor).
import { graphql } from "relay-runtime";

export const fragment = graphql`
  fragment ConversationMessages_conversation on Conversation
  @refetchable(queryName: "ConversationMessagesPaginationQuery")
  @argumentDefinitions(
    first: { type: "Int", defaultValue: 50 }
    after: { type: "String" }
    last: { type: "Int" }
    before: { type: "String" }
  ) {
    id
    messages(first: $first, after: $after, last: $last, before: $before)
      @connection(key: "ConversationMessages_messages") {
      edges {
        node {
          id
          content
          sentAt
          clientMessageId
          sender {
            id
            login
          }
        }
      }
    }
  }
`;
