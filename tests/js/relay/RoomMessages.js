// A room's messages, newest first, paged both ways, as ConversationMessages.
import { graphql } from "relay-runtime";

export const fragment = graphql`
  fragment RoomMessages_room on Room
  @refetchable(queryName: "RoomMessagesPaginationQuery")
  @argumentDefinitions(
    first: { type: "Int", defaultValue: 50 }
    after: { type: "String" }
    last: { type: "Int" }
    before: { type: "String" }
  ) {
    id
    name
    participantCount
    messages(first: $first, after: $after, last: $last, before: $before)
      @connection(key: "RoomMessages_messages") {
      edges {
        node {
          id
          content
          systemMessage
          postedAt
          author {
            id
            login
          }
        }
      }
    }
  }
`;
