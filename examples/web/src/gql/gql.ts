/* eslint-disable */
import * as types from './graphql';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  fragment UserPresence on User {\n    id\n    login\n    firstname\n    lastname\n    presence {\n      online\n      lastSeenAt\n    }\n  }\n": typeof types.UserPresenceFragmentDoc,
    "\n  fragment PartnerRow on TalkPartner {\n    id\n    unreadCount\n    lastMessage\n    lastMessageAt\n    lastMessageId\n    partner {\n      ...UserPresence\n    }\n  }\n": typeof types.PartnerRowFragmentDoc,
    "\n  fragment Message on DirectMessage {\n    id\n    content\n    sentAt\n    sender {\n      id\n      login\n    }\n  }\n": typeof types.MessageFragmentDoc,
    "\n  fragment ConversationState on Conversation {\n    id\n    unreadCount\n    partnerReadAt\n    messages(first: 50) {\n      nodes {\n        ...Message\n      }\n    }\n  }\n": typeof types.ConversationStateFragmentDoc,
    "\n  fragment RoomMessage on RoomMessage {\n    id\n    content\n    postedAt\n    systemMessage\n    author {\n      id\n      login\n    }\n  }\n": typeof types.RoomMessageFragmentDoc,
    "\n  query FrontPage {\n    posts(first: 10) {\n      nodes {\n        id\n        slug\n        title\n        body\n        tags\n        publishedAt\n        commentCount\n        author {\n          id\n          login\n          firstname\n        }\n      }\n    }\n  }\n": typeof types.FrontPageDocument,
    "\n  query Conversation($with: String!) {\n    me {\n      id\n      user {\n        id\n        login\n      }\n      conversation(with: $with) {\n        ...ConversationState\n        with {\n          ...UserPresence\n        }\n      }\n    }\n  }\n": typeof types.ConversationDocument,
    "\n  mutation SendMessage($to: String!, $content: String!, $clientMessageId: String) {\n    sendMessage(to: $to, content: $content, clientMessageId: $clientMessageId) {\n      ...Message\n      talkPartner {\n        ...PartnerRow\n      }\n      conversation {\n        ...ConversationState\n      }\n    }\n  }\n": typeof types.SendMessageDocument,
    "\n  mutation MarkConversationRead($with: String!) {\n    markConversationRead(with: $with) {\n      id\n      unreadCount\n      conversation {\n        id\n        unreadCount\n      }\n    }\n  }\n": typeof types.MarkConversationReadDocument,
    "\n  mutation SetTyping($with: String!, $typing: Boolean!) {\n    setTyping(with: $with, typing: $typing)\n  }\n": typeof types.SetTypingDocument,
    "\n  subscription Typing {\n    typing {\n      typing\n      from {\n        id\n        login\n      }\n    }\n  }\n": typeof types.TypingDocument,
    "\n  query TalkPartners {\n    me {\n      id\n      user {\n        ...UserPresence\n      }\n      talkPartners(first: 50) {\n        nodes {\n          ...PartnerRow\n        }\n      }\n    }\n  }\n": typeof types.TalkPartnersDocument,
    "\n  subscription MessageReceived($after: String) {\n    messageReceived(after: $after) {\n      ...Message\n      talkPartner {\n        ...PartnerRow\n      }\n      conversation {\n        ...ConversationState\n      }\n    }\n  }\n": typeof types.MessageReceivedDocument,
    "\n  subscription PresenceChanged($logins: [String!]!) {\n    presenceChanged(logins: $logins) {\n      user {\n        ...UserPresence\n      }\n    }\n  }\n": typeof types.PresenceChangedDocument,
    "\n  subscription ConversationRead {\n    conversationRead {\n      conversation {\n        id\n        partnerReadAt\n      }\n    }\n  }\n": typeof types.ConversationReadDocument,
    "\n  query Folders {\n    me {\n      id\n      folders {\n        id\n        label\n        color\n        unreadCount\n      }\n    }\n  }\n": typeof types.FoldersDocument,
    "\n  query Folder($label: String!) {\n    me {\n      id\n      folder(label: $label) {\n        id\n        label\n        emails(first: 20) {\n          nodes {\n            id\n            subject\n            sentAt\n            read\n            hasAttachments\n            from {\n              id\n              login\n            }\n            email {\n              id\n            }\n          }\n        }\n      }\n    }\n  }\n": typeof types.FolderDocument,
    "\n  query Email($id: ID!) {\n    me {\n      id\n      email(id: $id) {\n        id\n        subject\n        body\n        sentAt\n        read\n        from {\n          id\n          login\n        }\n        to {\n          id\n          login\n        }\n        attachments {\n          id\n          filename\n          contentType\n          size\n          url\n          urlExpiresAt\n        }\n      }\n    }\n  }\n": typeof types.EmailDocument,
    "\n  mutation MarkEmailRead($id: ID!) {\n    markEmailRead(id: $id) {\n      id\n      read\n    }\n  }\n": typeof types.MarkEmailReadDocument,
    "\n  mutation SendEmail($input: EmailInput!) {\n    sendEmail(input: $input) {\n      id\n    }\n  }\n": typeof types.SendEmailDocument,
    "\n  query Rooms {\n    rooms(first: 50) {\n      nodes {\n        id\n        name\n        banner\n        participantCount\n      }\n    }\n    me {\n      id\n      user {\n        id\n        rooms(first: 100) {\n          nodes {\n            id\n            name\n          }\n        }\n      }\n    }\n  }\n": typeof types.RoomsDocument,
    "\n  mutation JoinRoom($name: String!) {\n    joinRoom(name: $name) {\n      id\n      participantCount\n    }\n  }\n": typeof types.JoinRoomDocument,
    "\n  query Room($name: String!) {\n    room(name: $name) {\n      id\n      name\n      banner\n      participantCount\n      messages(first: 50) {\n        nodes {\n          ...RoomMessage\n        }\n      }\n    }\n  }\n": typeof types.RoomDocument,
    "\n  subscription RoomMessages($room: String!, $after: String) {\n    roomMessages(room: $room, after: $after) {\n      ...RoomMessage\n      room {\n        id\n        participantCount\n      }\n    }\n  }\n": typeof types.RoomMessagesDocument,
    "\n  mutation PostRoomMessage($room: String!, $content: String!, $clientMutationId: String) {\n    postRoomMessage(room: $room, content: $content, clientMutationId: $clientMutationId) {\n      id\n    }\n  }\n": typeof types.PostRoomMessageDocument,
    "\n  mutation SignIn($login: String!, $password: String!) {\n    signIn(login: $login, password: $password) {\n      token\n    }\n  }\n": typeof types.SignInDocument,
    "\n  mutation SignUp($input: SignUpInput!) {\n    signUp(input: $input) {\n      token\n    }\n  }\n": typeof types.SignUpDocument,
    "\n  mutation SignOut {\n    signOut\n  }\n": typeof types.SignOutDocument,
};
const documents: Documents = {
    "\n  fragment UserPresence on User {\n    id\n    login\n    firstname\n    lastname\n    presence {\n      online\n      lastSeenAt\n    }\n  }\n": types.UserPresenceFragmentDoc,
    "\n  fragment PartnerRow on TalkPartner {\n    id\n    unreadCount\n    lastMessage\n    lastMessageAt\n    lastMessageId\n    partner {\n      ...UserPresence\n    }\n  }\n": types.PartnerRowFragmentDoc,
    "\n  fragment Message on DirectMessage {\n    id\n    content\n    sentAt\n    sender {\n      id\n      login\n    }\n  }\n": types.MessageFragmentDoc,
    "\n  fragment ConversationState on Conversation {\n    id\n    unreadCount\n    partnerReadAt\n    messages(first: 50) {\n      nodes {\n        ...Message\n      }\n    }\n  }\n": types.ConversationStateFragmentDoc,
    "\n  fragment RoomMessage on RoomMessage {\n    id\n    content\n    postedAt\n    systemMessage\n    author {\n      id\n      login\n    }\n  }\n": types.RoomMessageFragmentDoc,
    "\n  query FrontPage {\n    posts(first: 10) {\n      nodes {\n        id\n        slug\n        title\n        body\n        tags\n        publishedAt\n        commentCount\n        author {\n          id\n          login\n          firstname\n        }\n      }\n    }\n  }\n": types.FrontPageDocument,
    "\n  query Conversation($with: String!) {\n    me {\n      id\n      user {\n        id\n        login\n      }\n      conversation(with: $with) {\n        ...ConversationState\n        with {\n          ...UserPresence\n        }\n      }\n    }\n  }\n": types.ConversationDocument,
    "\n  mutation SendMessage($to: String!, $content: String!, $clientMessageId: String) {\n    sendMessage(to: $to, content: $content, clientMessageId: $clientMessageId) {\n      ...Message\n      talkPartner {\n        ...PartnerRow\n      }\n      conversation {\n        ...ConversationState\n      }\n    }\n  }\n": types.SendMessageDocument,
    "\n  mutation MarkConversationRead($with: String!) {\n    markConversationRead(with: $with) {\n      id\n      unreadCount\n      conversation {\n        id\n        unreadCount\n      }\n    }\n  }\n": types.MarkConversationReadDocument,
    "\n  mutation SetTyping($with: String!, $typing: Boolean!) {\n    setTyping(with: $with, typing: $typing)\n  }\n": types.SetTypingDocument,
    "\n  subscription Typing {\n    typing {\n      typing\n      from {\n        id\n        login\n      }\n    }\n  }\n": types.TypingDocument,
    "\n  query TalkPartners {\n    me {\n      id\n      user {\n        ...UserPresence\n      }\n      talkPartners(first: 50) {\n        nodes {\n          ...PartnerRow\n        }\n      }\n    }\n  }\n": types.TalkPartnersDocument,
    "\n  subscription MessageReceived($after: String) {\n    messageReceived(after: $after) {\n      ...Message\n      talkPartner {\n        ...PartnerRow\n      }\n      conversation {\n        ...ConversationState\n      }\n    }\n  }\n": types.MessageReceivedDocument,
    "\n  subscription PresenceChanged($logins: [String!]!) {\n    presenceChanged(logins: $logins) {\n      user {\n        ...UserPresence\n      }\n    }\n  }\n": types.PresenceChangedDocument,
    "\n  subscription ConversationRead {\n    conversationRead {\n      conversation {\n        id\n        partnerReadAt\n      }\n    }\n  }\n": types.ConversationReadDocument,
    "\n  query Folders {\n    me {\n      id\n      folders {\n        id\n        label\n        color\n        unreadCount\n      }\n    }\n  }\n": types.FoldersDocument,
    "\n  query Folder($label: String!) {\n    me {\n      id\n      folder(label: $label) {\n        id\n        label\n        emails(first: 20) {\n          nodes {\n            id\n            subject\n            sentAt\n            read\n            hasAttachments\n            from {\n              id\n              login\n            }\n            email {\n              id\n            }\n          }\n        }\n      }\n    }\n  }\n": types.FolderDocument,
    "\n  query Email($id: ID!) {\n    me {\n      id\n      email(id: $id) {\n        id\n        subject\n        body\n        sentAt\n        read\n        from {\n          id\n          login\n        }\n        to {\n          id\n          login\n        }\n        attachments {\n          id\n          filename\n          contentType\n          size\n          url\n          urlExpiresAt\n        }\n      }\n    }\n  }\n": types.EmailDocument,
    "\n  mutation MarkEmailRead($id: ID!) {\n    markEmailRead(id: $id) {\n      id\n      read\n    }\n  }\n": types.MarkEmailReadDocument,
    "\n  mutation SendEmail($input: EmailInput!) {\n    sendEmail(input: $input) {\n      id\n    }\n  }\n": types.SendEmailDocument,
    "\n  query Rooms {\n    rooms(first: 50) {\n      nodes {\n        id\n        name\n        banner\n        participantCount\n      }\n    }\n    me {\n      id\n      user {\n        id\n        rooms(first: 100) {\n          nodes {\n            id\n            name\n          }\n        }\n      }\n    }\n  }\n": types.RoomsDocument,
    "\n  mutation JoinRoom($name: String!) {\n    joinRoom(name: $name) {\n      id\n      participantCount\n    }\n  }\n": types.JoinRoomDocument,
    "\n  query Room($name: String!) {\n    room(name: $name) {\n      id\n      name\n      banner\n      participantCount\n      messages(first: 50) {\n        nodes {\n          ...RoomMessage\n        }\n      }\n    }\n  }\n": types.RoomDocument,
    "\n  subscription RoomMessages($room: String!, $after: String) {\n    roomMessages(room: $room, after: $after) {\n      ...RoomMessage\n      room {\n        id\n        participantCount\n      }\n    }\n  }\n": types.RoomMessagesDocument,
    "\n  mutation PostRoomMessage($room: String!, $content: String!, $clientMutationId: String) {\n    postRoomMessage(room: $room, content: $content, clientMutationId: $clientMutationId) {\n      id\n    }\n  }\n": types.PostRoomMessageDocument,
    "\n  mutation SignIn($login: String!, $password: String!) {\n    signIn(login: $login, password: $password) {\n      token\n    }\n  }\n": types.SignInDocument,
    "\n  mutation SignUp($input: SignUpInput!) {\n    signUp(input: $input) {\n      token\n    }\n  }\n": types.SignUpDocument,
    "\n  mutation SignOut {\n    signOut\n  }\n": types.SignOutDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment UserPresence on User {\n    id\n    login\n    firstname\n    lastname\n    presence {\n      online\n      lastSeenAt\n    }\n  }\n"): (typeof documents)["\n  fragment UserPresence on User {\n    id\n    login\n    firstname\n    lastname\n    presence {\n      online\n      lastSeenAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment PartnerRow on TalkPartner {\n    id\n    unreadCount\n    lastMessage\n    lastMessageAt\n    lastMessageId\n    partner {\n      ...UserPresence\n    }\n  }\n"): (typeof documents)["\n  fragment PartnerRow on TalkPartner {\n    id\n    unreadCount\n    lastMessage\n    lastMessageAt\n    lastMessageId\n    partner {\n      ...UserPresence\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment Message on DirectMessage {\n    id\n    content\n    sentAt\n    sender {\n      id\n      login\n    }\n  }\n"): (typeof documents)["\n  fragment Message on DirectMessage {\n    id\n    content\n    sentAt\n    sender {\n      id\n      login\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ConversationState on Conversation {\n    id\n    unreadCount\n    partnerReadAt\n    messages(first: 50) {\n      nodes {\n        ...Message\n      }\n    }\n  }\n"): (typeof documents)["\n  fragment ConversationState on Conversation {\n    id\n    unreadCount\n    partnerReadAt\n    messages(first: 50) {\n      nodes {\n        ...Message\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment RoomMessage on RoomMessage {\n    id\n    content\n    postedAt\n    systemMessage\n    author {\n      id\n      login\n    }\n  }\n"): (typeof documents)["\n  fragment RoomMessage on RoomMessage {\n    id\n    content\n    postedAt\n    systemMessage\n    author {\n      id\n      login\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query FrontPage {\n    posts(first: 10) {\n      nodes {\n        id\n        slug\n        title\n        body\n        tags\n        publishedAt\n        commentCount\n        author {\n          id\n          login\n          firstname\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query FrontPage {\n    posts(first: 10) {\n      nodes {\n        id\n        slug\n        title\n        body\n        tags\n        publishedAt\n        commentCount\n        author {\n          id\n          login\n          firstname\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Conversation($with: String!) {\n    me {\n      id\n      user {\n        id\n        login\n      }\n      conversation(with: $with) {\n        ...ConversationState\n        with {\n          ...UserPresence\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Conversation($with: String!) {\n    me {\n      id\n      user {\n        id\n        login\n      }\n      conversation(with: $with) {\n        ...ConversationState\n        with {\n          ...UserPresence\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SendMessage($to: String!, $content: String!, $clientMessageId: String) {\n    sendMessage(to: $to, content: $content, clientMessageId: $clientMessageId) {\n      ...Message\n      talkPartner {\n        ...PartnerRow\n      }\n      conversation {\n        ...ConversationState\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation SendMessage($to: String!, $content: String!, $clientMessageId: String) {\n    sendMessage(to: $to, content: $content, clientMessageId: $clientMessageId) {\n      ...Message\n      talkPartner {\n        ...PartnerRow\n      }\n      conversation {\n        ...ConversationState\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation MarkConversationRead($with: String!) {\n    markConversationRead(with: $with) {\n      id\n      unreadCount\n      conversation {\n        id\n        unreadCount\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation MarkConversationRead($with: String!) {\n    markConversationRead(with: $with) {\n      id\n      unreadCount\n      conversation {\n        id\n        unreadCount\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetTyping($with: String!, $typing: Boolean!) {\n    setTyping(with: $with, typing: $typing)\n  }\n"): (typeof documents)["\n  mutation SetTyping($with: String!, $typing: Boolean!) {\n    setTyping(with: $with, typing: $typing)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription Typing {\n    typing {\n      typing\n      from {\n        id\n        login\n      }\n    }\n  }\n"): (typeof documents)["\n  subscription Typing {\n    typing {\n      typing\n      from {\n        id\n        login\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query TalkPartners {\n    me {\n      id\n      user {\n        ...UserPresence\n      }\n      talkPartners(first: 50) {\n        nodes {\n          ...PartnerRow\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query TalkPartners {\n    me {\n      id\n      user {\n        ...UserPresence\n      }\n      talkPartners(first: 50) {\n        nodes {\n          ...PartnerRow\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription MessageReceived($after: String) {\n    messageReceived(after: $after) {\n      ...Message\n      talkPartner {\n        ...PartnerRow\n      }\n      conversation {\n        ...ConversationState\n      }\n    }\n  }\n"): (typeof documents)["\n  subscription MessageReceived($after: String) {\n    messageReceived(after: $after) {\n      ...Message\n      talkPartner {\n        ...PartnerRow\n      }\n      conversation {\n        ...ConversationState\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription PresenceChanged($logins: [String!]!) {\n    presenceChanged(logins: $logins) {\n      user {\n        ...UserPresence\n      }\n    }\n  }\n"): (typeof documents)["\n  subscription PresenceChanged($logins: [String!]!) {\n    presenceChanged(logins: $logins) {\n      user {\n        ...UserPresence\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription ConversationRead {\n    conversationRead {\n      conversation {\n        id\n        partnerReadAt\n      }\n    }\n  }\n"): (typeof documents)["\n  subscription ConversationRead {\n    conversationRead {\n      conversation {\n        id\n        partnerReadAt\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Folders {\n    me {\n      id\n      folders {\n        id\n        label\n        color\n        unreadCount\n      }\n    }\n  }\n"): (typeof documents)["\n  query Folders {\n    me {\n      id\n      folders {\n        id\n        label\n        color\n        unreadCount\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Folder($label: String!) {\n    me {\n      id\n      folder(label: $label) {\n        id\n        label\n        emails(first: 20) {\n          nodes {\n            id\n            subject\n            sentAt\n            read\n            hasAttachments\n            from {\n              id\n              login\n            }\n            email {\n              id\n            }\n          }\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Folder($label: String!) {\n    me {\n      id\n      folder(label: $label) {\n        id\n        label\n        emails(first: 20) {\n          nodes {\n            id\n            subject\n            sentAt\n            read\n            hasAttachments\n            from {\n              id\n              login\n            }\n            email {\n              id\n            }\n          }\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Email($id: ID!) {\n    me {\n      id\n      email(id: $id) {\n        id\n        subject\n        body\n        sentAt\n        read\n        from {\n          id\n          login\n        }\n        to {\n          id\n          login\n        }\n        attachments {\n          id\n          filename\n          contentType\n          size\n          url\n          urlExpiresAt\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Email($id: ID!) {\n    me {\n      id\n      email(id: $id) {\n        id\n        subject\n        body\n        sentAt\n        read\n        from {\n          id\n          login\n        }\n        to {\n          id\n          login\n        }\n        attachments {\n          id\n          filename\n          contentType\n          size\n          url\n          urlExpiresAt\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation MarkEmailRead($id: ID!) {\n    markEmailRead(id: $id) {\n      id\n      read\n    }\n  }\n"): (typeof documents)["\n  mutation MarkEmailRead($id: ID!) {\n    markEmailRead(id: $id) {\n      id\n      read\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SendEmail($input: EmailInput!) {\n    sendEmail(input: $input) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation SendEmail($input: EmailInput!) {\n    sendEmail(input: $input) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Rooms {\n    rooms(first: 50) {\n      nodes {\n        id\n        name\n        banner\n        participantCount\n      }\n    }\n    me {\n      id\n      user {\n        id\n        rooms(first: 100) {\n          nodes {\n            id\n            name\n          }\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Rooms {\n    rooms(first: 50) {\n      nodes {\n        id\n        name\n        banner\n        participantCount\n      }\n    }\n    me {\n      id\n      user {\n        id\n        rooms(first: 100) {\n          nodes {\n            id\n            name\n          }\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation JoinRoom($name: String!) {\n    joinRoom(name: $name) {\n      id\n      participantCount\n    }\n  }\n"): (typeof documents)["\n  mutation JoinRoom($name: String!) {\n    joinRoom(name: $name) {\n      id\n      participantCount\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Room($name: String!) {\n    room(name: $name) {\n      id\n      name\n      banner\n      participantCount\n      messages(first: 50) {\n        nodes {\n          ...RoomMessage\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Room($name: String!) {\n    room(name: $name) {\n      id\n      name\n      banner\n      participantCount\n      messages(first: 50) {\n        nodes {\n          ...RoomMessage\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription RoomMessages($room: String!, $after: String) {\n    roomMessages(room: $room, after: $after) {\n      ...RoomMessage\n      room {\n        id\n        participantCount\n      }\n    }\n  }\n"): (typeof documents)["\n  subscription RoomMessages($room: String!, $after: String) {\n    roomMessages(room: $room, after: $after) {\n      ...RoomMessage\n      room {\n        id\n        participantCount\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation PostRoomMessage($room: String!, $content: String!, $clientMutationId: String) {\n    postRoomMessage(room: $room, content: $content, clientMutationId: $clientMutationId) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation PostRoomMessage($room: String!, $content: String!, $clientMutationId: String) {\n    postRoomMessage(room: $room, content: $content, clientMutationId: $clientMutationId) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignIn($login: String!, $password: String!) {\n    signIn(login: $login, password: $password) {\n      token\n    }\n  }\n"): (typeof documents)["\n  mutation SignIn($login: String!, $password: String!) {\n    signIn(login: $login, password: $password) {\n      token\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignUp($input: SignUpInput!) {\n    signUp(input: $input) {\n      token\n    }\n  }\n"): (typeof documents)["\n  mutation SignUp($input: SignUpInput!) {\n    signUp(input: $input) {\n      token\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignOut {\n    signOut\n  }\n"): (typeof documents)["\n  mutation SignOut {\n    signOut\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;