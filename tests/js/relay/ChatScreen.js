// The screens' queries, and the mutations and subscriptions that keep them current: the new
// message is prepended to the connections the client names (@prependNode); the payload's
// conversation and talkPartner rows update the rest of the store by id.
import { graphql } from "relay-runtime";

export const mainView = graphql`
  query ChatScreenMainViewQuery {
    me {
      ...TalkPartnerList_me
    }
  }
`;

export const conversation = graphql`
  query ChatScreenConversationQuery($with: String!) {
    me {
      conversation(with: $with) {
        ...ConversationHeader_conversation
        ...ConversationMessages_conversation
      }
    }
  }
`;

export const room = graphql`
  query ChatScreenRoomQuery($name: String!) {
    room(name: $name) {
      ...RoomMessages_room
    }
  }
`;

export const send = graphql`
  mutation ChatScreenSendMutation($to: String!, $content: String!, $clientMessageId: String, $connections: [ID!]!) {
    sendMessage(to: $to, content: $content, clientMessageId: $clientMessageId)
      @prependNode(connections: $connections, edgeTypeName: "DirectMessageEdge") {
      id
      content
      sentAt
      clientMessageId
      sender {
        id
        login
      }
      conversation {
        id
        unreadCount
      }
      talkPartner {
        id
        lastMessage
        lastMessageAt
        unreadCount
      }
    }
  }
`;

export const received = graphql`
  subscription ChatScreenReceivedSubscription($connections: [ID!]!) {
    messageReceived @prependNode(connections: $connections, edgeTypeName: "DirectMessageEdge") {
      id
      content
      sentAt
      sender {
        id
        login
      }
      conversation {
        id
        unreadCount
      }
      talkPartner {
        id
        lastMessage
        lastMessageAt
        unreadCount
      }
    }
  }
`;

export const markRead = graphql`
  mutation ChatScreenMarkReadMutation($with: String!) {
    markConversationRead(with: $with) {
      id
      unreadCount
      conversation {
        id
        unreadCount
        unreadSince
      }
    }
  }
`;

export const post = graphql`
  mutation ChatScreenPostMutation($room: String!, $content: String!, $connections: [ID!]!) {
    postRoomMessage(room: $room, content: $content)
      @prependNode(connections: $connections, edgeTypeName: "RoomMessageEdge") {
      id
      content
      postedAt
      author {
        id
        login
      }
      room {
        id
        participantCount
      }
    }
  }
`;

export const roomMessages = graphql`
  subscription ChatScreenRoomMessagesSubscription($room: String!, $connections: [ID!]!) {
    roomMessages(room: $room) @prependNode(connections: $connections, edgeTypeName: "RoomMessageEdge") {
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
`;
